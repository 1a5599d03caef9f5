package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

func TestLockUnlock(t *testing.T) {
	srv := redistest.Start(t)
	c := newLockClient(t, srv, 0)
	l := c.Lock("lock")
	ctx := ctxT(t, 10*time.Second)

	held := mustLock(t, l, ctx)
	owner, ok := rlock.OwnerOf(held)
	if !ok {
		t.Fatal("held context carries no owner")
	}
	if m := hgetall(t, srv, "lock"); len(m) != 1 || m[owner] != "1" {
		t.Fatalf("HGETALL lock = %v, want {%s: 1}", m, owner)
	}
	if locked, err := l.IsLocked(ctx); err != nil || !locked {
		t.Fatalf("IsLocked = %v, %v", locked, err)
	}
	mustUnlock(t, l, held)
	if locked, err := l.IsLocked(ctx); err != nil || locked {
		t.Fatalf("IsLocked after unlock = %v, %v", locked, err)
	}
	if !errors.Is(context.Cause(held), rlock.ErrReleased) {
		t.Fatalf("cause after unlock = %v, want ErrReleased", context.Cause(held))
	}
}
