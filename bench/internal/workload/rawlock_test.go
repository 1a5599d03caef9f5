package workload

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// serverTransport runs the scripts on a real server through the test
// harness's client, recording every call (no subscriptions: the tests here
// never wait).
type serverTransport struct {
	srv   *redistest.Server
	calls [][]string
}

func (s *serverTransport) Eval(ctx context.Context, sc *Script, keys []string, args ...string) (Reply, error) {
	cmd := append(append([]string{"EVALSHA", sc.SHA, strconv.Itoa(len(keys))}, keys...), args...)
	s.calls = append(s.calls, cmd)
	r, err := s.srv.Do(ctx, cmd...)
	switch {
	case err != nil:
		return Reply{}, err
	case r.Kind == redistest.KindNil:
		return Reply{Kind: ReplyNil}, nil
	case r.Kind == redistest.KindInt:
		return Reply{Kind: ReplyInt, N: r.Int}, nil
	}
	n, err := strconv.ParseInt(r.Str, 10, 64)
	return Reply{Kind: ReplyBulk, N: n}, err
}

func (s *serverTransport) Subscribe(context.Context, string, func()) (func(), error) {
	return nil, errors.New("serverTransport: no subscriptions")
}

func (s *serverTransport) Close() error { return nil }

// TestRawLockRunsRlockScriptsAsRlockDoes checks the raw baseline's lock on a
// real server: one EVALSHA of rlock's acquire with rlock's arguments, one of
// its release expecting one hold (the lock is deleted), and a second release
// of the same hold reports ErrNotOwner.
func TestRawLockRunsRlockScriptsAsRlockDoes(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, sc := range []*Script{AcquireScript, ReleaseScript} {
		if sha, err := srv.DoString(ctx, "SCRIPT", "LOAD", sc.Src); err != nil || sha != sc.SHA {
			t.Fatalf("SCRIPT LOAD %s: %s, %v; want %s", sc.Name, sha, err, sc.SHA)
		}
	}
	tr := &serverTransport{srv: srv}
	l := NewRawLock(tr, 10*time.Second)
	bound := l.Bind("raw")
	h, err := bound.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	owner := h.(rawHeld).b.ownerID
	if got, err := srv.DoString(ctx, "HGET", "raw", owner); err != nil || got != "1" {
		t.Fatalf("HGET raw %s = %q, %v; want hold count 1", owner, got, err)
	}
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := srv.DoInt(ctx, "EXISTS", "raw"); err != nil || n != 0 {
		t.Fatalf("EXISTS raw = %d, %v after the release", n, err)
	}
	if err := h.Unlock(ctx); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("second Unlock: %v, want ErrNotOwner", err)
	}
	keys := LockKeys("raw")
	acq := append(append([]string{"EVALSHA", AcquireScript.SHA, "4"}, keys...), "10000", owner, "", "publish")
	rel := append(append([]string{"EVALSHA", ReleaseScript.SHA, "4"}, keys...), owner, "1", "10000", "publish")
	want := [][]string{acq, rel}
	for i, w := range want {
		if got := tr.calls[i]; !slices.Equal(got, w) {
			t.Errorf("call %d = %q, want %q", i, got, w)
		}
	}
	// A bound lock keeps its owner and arguments: the next acquisition sends the same call.
	h2, err := bound.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := h2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if got := tr.calls[3]; !slices.Equal(got, want[0]) {
		t.Errorf("second acquisition = %q, want %q", got, want[0])
	}
	// Another binding of the same name is another owner.
	if h3, err := l.Bind("raw").Lock(ctx); err != nil {
		t.Fatal(err)
	} else if o := h3.(rawHeld).b.ownerID; o == owner {
		t.Errorf("two bindings share the owner %s", o)
	}
}
