//go:build unix

package main

import (
	"context"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// A fixed lease's stop schedule counts from the library's account of the lease when it is earlier than rlock's
// own (after a wait, rlock only knows when the acquire returned), and from rlock's own otherwise.
func TestLeaseEndTakesTheEarlierAccount(t *testing.T) {
	srv := redistest.Start(t)
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const lease = 2 * time.Second
	held, err := c.Lock("job").TryLock(ctx, 0, lease)
	if err != nil {
		t.Fatal(err)
	}
	lib, ok := rlock.LeaseEnd(held)
	if !ok {
		t.Fatal("rlock.LeaseEnd: no lease for a held fixed-lease lock")
	}
	// rlock's own account says later (as after a long hand-over): the library's counts.
	if got := leaseEnd(grant{held: held, leaseFrom: time.Now()}, lease); !got.Equal(lib) {
		t.Fatalf("leaseEnd = %v after the library's end, want the library's", got.Sub(lib))
	}
	// rlock's own account says earlier: it counts.
	early := time.Now().Add(-time.Second)
	if got := leaseEnd(grant{held: held, leaseFrom: early}, lease); !got.Equal(early.Add(lease)) {
		t.Fatalf("leaseEnd = %v, want rlock's own %v", got, early.Add(lease))
	}
	// A held context the library does not know (another locker): rlock's own account.
	if got := leaseEnd(grant{held: ctx, leaseFrom: early}, lease); !got.Equal(early.Add(lease)) {
		t.Fatalf("leaseEnd for an unknown held context = %v, want %v", got, early.Add(lease))
	}
}
