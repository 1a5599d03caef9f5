//go:build unix

package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/rlock"
)

func TestStatusExitCodeAndOutput(t *testing.T) {
	h := newHarness(t)
	code, out, _ := h.runSync(t, "status", "job")
	if code != exitNo || joined(out) != "job: free" {
		t.Fatalf("free lock: code %d, output %q", code, out)
	}

	h = newHarness(t)
	h.fake.hold("job", "u:1")
	code, out, _ = h.runSync(t, "status", "job")
	if code != exitOK || joined(out) != "job: locked, lease ends in 25s\n  owner u:1  holds 1" {
		t.Fatalf("held lock: code %d, output %q", code, joined(out))
	}

	h = newHarness(t)
	h.fake.hold("job", "u:1")
	code, out, _ = h.runSync(t, "-json", "status", "job")
	e := parseEvent(t, joined(out))
	if ttl, _ := e.num("ttl_ms"); code != 0 || e.str("event") != "status" || e["locked"] != true || ttl != 25000 {
		t.Fatalf("json status: code %d, %v", code, e)
	}
}

func TestStatusOfAKeyThatIsNotALock(t *testing.T) {
	h := newHarness(t)
	h.fake.statusErr = &notLockError{name: "job", detail: "it holds a string"}
	code, _, errs := h.runSync(t, "status", "job")
	if code != exitSoftware || !strings.Contains(joined(errs), "choose another lock name") {
		t.Fatalf("code %d, stderr %q", code, errs)
	}
}

func TestForceUnlock(t *testing.T) {
	h := newHarness(t)
	h.fake.hold("job", "u:1")
	code, out, _ := h.runSync(t, "force-unlock", "job")
	if code != 0 || !strings.Contains(joined(out), "job: force-unlocked (it was held by u:1 (1 hold)") {
		t.Fatalf("code %d, output %q", code, out)
	}
	if h.fake.snapshot() != "" {
		t.Fatal("the lock is still there")
	}
	h = newHarness(t)
	code, out, _ = h.runSync(t, "-json", "force-unlock", "job")
	if e := parseEvent(t, joined(out)); code != 0 || e.str("event") != "force_unlocked" || e["deleted"] != false {
		t.Fatalf("code %d, %v", code, e)
	}
}

func TestForceUnlockRefusesToDeleteAKeyThatIsNotALock(t *testing.T) {
	h := newHarness(t)
	h.fake.hold("job", "u:1")
	h.fake.statusErr = &notLockError{name: "job", detail: "it holds a list"}
	if code, _, _ := h.runSync(t, "force-unlock", "job"); code != exitSoftware {
		t.Fatalf("code %d, want %d", code, exitSoftware)
	}
	if h.fake.snapshot() != "job=u:1*1" {
		t.Fatal("force-unlock deleted a key that is not a lock")
	}
}

func TestLockPrintsTheOwnerAndUnlockReleasesIt(t *testing.T) {
	h := newHarness(t)
	code, out, _ := h.runSync(t, "lock", "-hold", "1m", "job")
	if code != 0 || joined(out) != "fake-uuid:1" {
		t.Fatalf("lock: code %d, output %q", code, out)
	}
	owner := out[0]
	if h.fake.snapshot() != "job=fake-uuid:1*1" {
		t.Fatalf("after lock: %s", h.fake.snapshot())
	}
	h2 := newHarness(t)
	h2.fake = h.fake
	if code, out, errs := h2.runSync(t, "lock", "-hold", "1m", "-wait", "0", "job"); code != exitNotAcquired {
		t.Fatalf("second lock: code %d, %q %q", code, out, errs)
	}
	h3 := newHarness(t)
	h3.fake = h.fake
	if code, out, _ := h3.runSync(t, "-json", "unlock", "-owner", owner, "job"); code != 0 || parseEvent(t, joined(out)).str("event") != "unlocked" {
		t.Fatalf("unlock: code %d, %q", code, out)
	}
	if h.fake.snapshot() != "" {
		t.Fatalf("after unlock: %s", h.fake.snapshot())
	}
	h4 := newHarness(t)
	h4.fake = h.fake
	code, _, errs := h4.runSync(t, "unlock", "-owner", owner, "job")
	if code != exitNo || !strings.Contains(joined(errs), "job is not held by "+owner) {
		t.Fatalf("second unlock: code %d, %q", code, errs)
	}
}

func TestLockWithOwnerReenters(t *testing.T) {
	h := newHarness(t)
	h.fake.hold("job", "a-b-c:5")
	if code, out, _ := h.runSync(t, "lock", "-hold", "1m", "-wait", "0", "-owner", "a-b-c:5", "job"); code != 0 || joined(out) != "a-b-c:5" {
		t.Fatalf("code %d, %q", code, out)
	}
	if h.fake.snapshot() != "job=a-b-c:5*2" {
		t.Fatalf("state %s", h.fake.snapshot())
	}
}

func TestDescribeSaysWhatToDo(t *testing.T) {
	connect := func(cause error) error { return &conn.ConnError{Addr: "10.0.0.9:6379", Op: "connect", Err: cause} }
	for _, tc := range []struct {
		err  error
		code int
		want string
	}{
		{connect(&net.OpError{Op: "dial", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}),
			exitUnavailable, "cannot connect to Redis at 10.0.0.9:6379: connection refused. Is redis-server running there?"},
		{connect(fmt.Errorf("PING: %w", resp.NewServerError("NOAUTH Authentication required."))),
			exitUnavailable, "pass it in the URL, -addr redis://:PASSWORD@10.0.0.9:6379"},
		{connect(fmt.Errorf("AUTH: %w", resp.NewServerError("WRONGPASS invalid username-password pair"))),
			exitUnavailable, "refused the user name or password"},
		{resp.NewServerError("READONLY You can't write against a read only replica."), exitUnavailable, "point -addr at the master"},
		{resp.NewServerError("NOPERM this user has no permissions to run the 'evalsha' command"), exitUnavailable, "+evalsha +script|load"},
		{resp.NewServerError("WRONGTYPE Operation against a key holding the wrong kind of value"), exitSoftware, `the key "job" exists and is not a lock`},
		{connect(&net.DNSError{Err: "no such host", Name: "redis.internal", IsNotFound: true}), exitUnavailable, "cannot resolve"},
		{connect(&timeoutErr{}), exitUnavailable, "within the dial timeout"},
		{&conn.ConnError{Addr: "10.0.0.9:6379", Op: "timeout", Err: conn.ErrTimeout}, exitUnavailable, "response timeout"},
		{fmt.Errorf("%w: URL scheme %q", conn.ErrInvalidConfig, "http"), exitUsage, "invalid -addr"},
		{&rlock.ArgumentError{Op: "TryLock", Arg: "owner", Value: `"x"`, Reason: "bad"}, exitUsage, "owner"},
		{rlock.ErrClosed, exitSoftware, "internal error"},
		{errors.New("something else"), exitSoftware, "unexpected error: something else"},
	} {
		f := describe(tc.err, "10.0.0.9:6379", "job")
		if f.code != tc.code || !strings.Contains(f.msg, tc.want) {
			t.Errorf("describe(%v) = %d %q; want %d and %q", tc.err, f.code, f.msg, tc.code, tc.want)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestAddrFlagMasksThePassword(t *testing.T) {
	for in, want := range map[string]string{
		"redis://:s3cret@h:1":    "redis://:xxxxx@h:1",
		"redis://u:s3cret@h:1/2": "redis://u:xxxxx@h:1/2",
		"redis://h:1":            "redis://h:1",
		"rediss://u@h:1?x=1":     "rediss://u@h:1?x=1",
		"not a url %%":           "not a url %%",
	} {
		a := addrValue{c: &common{red: &redactor{}}}
		_ = a.Set(in)
		if got := a.String(); got != want {
			t.Errorf("%q shown as %q, want %q", in, got, want)
		}
	}
}
