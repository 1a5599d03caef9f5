package conn_test

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

var incrScript = conn.NewScript(`return redis.call('INCRBY', KEYS[1], ARGV[1])`)

func TestScriptSHAIsComputedLocally(t *testing.T) {
	src := "return 1"
	sum := sha1.Sum([]byte(src))
	s := conn.NewScript(src)
	if s.SHA() != hex.EncodeToString(sum[:]) || s.Source() != src {
		t.Fatalf("SHA %q Source %q", s.SHA(), s.Source())
	}
}

// The first EVALSHA on a fresh server gets NOSCRIPT; the caller sees only the result.
func TestEvalLoadsTheScriptInvisibly(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, conn.Config{Addr: srv.Addr()})
	ctx := ctxT(t)
	v, err := c.Eval(ctx, incrScript, []string{"n"}, "5").Get(ctx)
	if err != nil || v.Int != 5 {
		t.Fatalf("Eval = %v, %v; want 5", v, err)
	}
	exists, err := srv.Do(ctx, "SCRIPT", "EXISTS", incrScript.SHA())
	if err != nil || len(exists.Array) != 1 || exists.Array[0].Int != 1 {
		t.Fatalf("SCRIPT EXISTS = %v, %v; want [1]", exists, err)
	}
}

// SCRIPT FLUSH while many EVALSHA are pipelined: every NOSCRIPT is answered by SCRIPT LOAD and a resend; no error
// reaches a caller and every increment is applied exactly once.
func TestScriptFlushMidPipelineIsInvisible(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, conn.Config{Addr: srv.Addr(), PoolSize: 2})
	ctx := ctxT(t)
	// Loaded beforehand, so that every NOSCRIPT comes from the flush in the middle of the load.
	if _, err := srv.Do(ctx, "SCRIPT", "LOAD", incrScript.Source()); err != nil {
		t.Fatal(err)
	}
	const goroutines, perG = 32, 300
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	flushed := make(chan struct{})
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perG {
				if g == 0 && i == perG/3 {
					if _, err := c.Do(ctx, "SCRIPT", "FLUSH").Get(ctx); err != nil {
						errs <- err
						return
					}
					close(flushed)
				}
				if _, err := c.Eval(ctx, incrScript, []string{fmt.Sprintf("k%d", g)}, "1").Get(ctx); err != nil {
					errs <- fmt.Errorf("goroutine %d call %d: %w", g, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	<-flushed
	stats, err := srv.Info(ctx, "errorstats")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stats["errorstat_NOSCRIPT"], "count=") {
		t.Fatalf("the server never answered NOSCRIPT (errorstats %v): the flush did not hit the pipelined load", stats)
	}
	t.Logf("NOSCRIPT replies answered by SCRIPT LOAD and a resend: %s", stats["errorstat_NOSCRIPT"])
	for g := range goroutines {
		n, err := srv.DoInt(ctx, "GET", fmt.Sprintf("k%d", g))
		if err != nil || n != perG {
			t.Fatalf("k%d = %d, %v; want %d", g, n, err, perG)
		}
	}
}
