//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// Every refusal of the credentials or of a permission exits 69 with what to do about it.
func TestE2EAuthRefusalsExit69AndSayWhatToDo(t *testing.T) {
	withPass := redistest.Start(t, redistest.WithPassword("s3cret"))
	noPass := redistest.Start(t)
	ctx := ctxTest(t)
	// A user without EVALSHA, and one without the lock's channel (force-unlock's script publishes on it: the
	// message is refused, the unlock is not).
	if _, err := noPass.Do(ctx, "ACL", "SETUSER", "noeval", "on", ">pw", "~*", "&*", "+@all", "-evalsha"); err != nil {
		t.Fatal(err)
	}
	if _, err := noPass.Do(ctx, "ACL", "SETUSER", "nochannel", "on", ">pw", "~*", "resetchannels", "+@all"); err != nil {
		t.Fatal(err)
	}
	if _, err := noPass.Do(ctx, "HSET", "held", "someone:1", "1"); err != nil { // for force-unlock to delete
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		url  string
		args []string
		msg  string
	}{
		{"NOAUTH", "redis://" + withPass.Addr(), nil,
			"requires a password (NOAUTH): pass it in the URL, -addr redis://:PASSWORD@" + withPass.Addr()},
		{"WRONGPASS", "redis://:wrong@" + withPass.Addr(), nil, "refused the user name or password (WRONGPASS)"},
		{"AUTH without a server password", "redis://:pw@" + noPass.Addr(), nil,
			"has no password set, and refused the one in the URL"},
		{"NOPERM on EVALSHA", "redis://noeval:pw@" + noPass.Addr(), nil, "+evalsha +script|load"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if args == nil {
				args = []string{"exec", "job", "--", "true"}
			}
			code, _, errs := runRlock(t, nil, append([]string{"-addr", tc.url}, args...)...)
			if code != exitUnavailable || !strings.Contains(joined(errs), tc.msg) {
				t.Fatalf("exit %d, stderr:\n%s\nwant %d and %q", code, joined(errs), exitUnavailable, tc.msg)
			}
		})
	}
	// Without the channel, force-unlock still deletes the lock: only the wake-up message was refused.
	if code, _, errs := runRlock(t, nil, "-addr", "redis://nochannel:pw@"+noPass.Addr(), "force-unlock", "held"); code != 0 {
		t.Fatalf("force-unlock without the channel: exit %d %q", code, errs)
	}
	if n, err := noPass.DoInt(ctx, "EXISTS", "held"); err != nil || n != 0 {
		t.Fatalf("EXISTS held = %d, %v after force-unlock", n, err)
	}
	// And with the password in the URL it works.
	if code, _, errs := runRlock(t, nil, "-addr", withPass.URL(), "exec", "job", "--", "true"); code != 0 {
		t.Fatalf("with the password: exit %d %q", code, errs)
	}
}

// rediss:// against a server without TLS: the handshake gets no answer, and rlock says why.
func TestE2ETLSAgainstAPlainServerSaysSo(t *testing.T) {
	srv := redistest.Start(t)
	code, _, errs := runRlock(t, nil, "-addr", "rediss://"+srv.Addr()+"?dial_timeout=300ms", "status", "job")
	if code != exitUnavailable || !strings.Contains(joined(errs), "answers without TLS") ||
		!strings.Contains(joined(errs), "use redis://") {
		t.Fatalf("exit %d, stderr:\n%s", code, joined(errs))
	}
}

// The minimal ACL of the README is enough for every subcommand, the wait for a busy lock (SUBSCRIBE, woken by
// the holder's PUBLISH) included, and nothing is reported as refused.
func TestE2EMinimalACLIsEnough(t *testing.T) {
	srv := redistest.Start(t)
	rules := append([]string{"ACL", "SETUSER", "locker", "reset", "on", ">pw"}, aclRules("job")...)
	if _, err := srv.Do(ctxTest(t), rules...); err != nil {
		t.Fatalf("%v: %v", rules, err)
	}
	url := "redis://locker:pw@" + srv.Addr()
	run := func(want int, args ...string) []string {
		t.Helper()
		code, out, errs := runRlock(t, nil, append([]string{"-addr", url}, args...)...)
		if code != want || len(errs) != 0 {
			t.Fatalf("rlock %v: exit %d, stderr:\n%s", args, code, joined(errs))
		}
		return out
	}
	run(0, "exec", "-wait", "0", "job", "--", "true")
	run(exitNo, "status", "job")

	// A holder and a waiter: the waiter subscribes, the holder's release publishes and wakes it.
	file := filepath.Join(t.TempDir(), "runs")
	a := startRlock(t, nil, append([]string{"-addr", url}, execArgs(nil, "job", holdCmd(t, file, "A", ""))...)...)
	a.stdout.expect(t, "holding")
	b := startRlock(t, nil, append([]string{"-addr", url}, execArgs(nil, "job", holdCmd(t, file, "B", ""))...)...)
	b.stderr.nextEvent(t, "waiting")
	a.closeStdin()
	b.stdout.expect(t, "holding")
	b.closeStdin()
	for _, p := range []*proc{a, b} {
		if code := p.wait(t); code != 0 {
			t.Fatalf("exit %d", code)
		}
		for _, l := range p.stderr.rest(t) {
			if ev := parseEvent(t, l).str("event"); ev == "release_failed" || ev == "error" {
				t.Fatalf("%s", l)
			}
		}
	}
	checkNoOverlap(t, file)

	owner := run(0, "lock", "-hold", "10s", "job")
	run(0, "status", "job")
	run(0, "unlock", "-owner", owner[0], "job")
	run(0, "lock", "-hold", "10s", "job")
	run(0, "force-unlock", "job")
	run(exitNo, "status", "job")
}
