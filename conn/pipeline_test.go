package conn_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
)

// configsUnder returns the configurations every concurrency test runs with: both flush policies, one and several
// connections, several event loops, and TLS.
func configsUnder(t *testing.T) map[string]conn.Config {
	srv := redistest.Start(t)
	tlsSrv := redistest.Start(t, redistest.WithTLS())
	return map[string]conn.Config{
		"eager-pool1":    {Addr: srv.Addr(), PoolSize: 1},
		"no-lane-pool2":  {Addr: srv.Addr(), PoolSize: 2, DisableLatencyLane: true},
		"eager-pool3-2l": {Addr: srv.Addr(), PoolSize: 3, EventLoops: 2},
		"onreply-pool2":  {Addr: srv.Addr(), PoolSize: 2, FlushPolicy: conn.FlushOnReply},
		"tls-pool2":      {Addr: tlsSrv.Addr(), PoolSize: 2, TLS: tlsSrv.TLSConfig()},
	}
}

// Many goroutines, each with its own keys: every reply must be the one for its own command (a FIFO mix-up between
// callers, flushes or connections would show as a wrong value).
func TestConcurrentCommandsGetTheirOwnReplies(t *testing.T) {
	for name, cfg := range configsUnder(t) {
		t.Run(name, func(t *testing.T) {
			c := newClient(t, cfg)
			ctx := ctxT(t)
			const goroutines, perG = 64, 200
			var wg sync.WaitGroup
			errs := make(chan error, goroutines)
			for g := range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := name + ":" + strconv.Itoa(g)
					for i := range perG {
						val := strconv.Itoa(i)
						var err error
						var v resp.Value
						switch i % 3 {
						case 0:
							if _, err = c.Do(ctx, "SET", key, val).Get(ctx); err == nil {
								v, err = c.Do(ctx, "GET", key).Get(ctx)
							}
						case 1:
							v, err = c.Eval(ctx, echoScript, []string{key}, val).Get(ctx)
						case 2:
							fs := c.Pipeline(ctx, conn.Cmd{Args: []string{"SET", key, val}}, conn.Cmd{Args: []string{"GET", key}})
							if _, err = fs[0].Get(ctx); err == nil {
								v, err = fs[1].Get(ctx)
							}
						}
						if err != nil || v.Str != val {
							errs <- fmt.Errorf("goroutine %d step %d: got %v, %v; want %q", g, i, v, err, val)
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
		})
	}
}

var echoScript = conn.NewScript(`redis.call('SET', KEYS[1], ARGV[1]); return redis.call('GET', KEYS[1])`)

// A Pipeline's commands reach the server back to back: concurrent pipelines appending to one list never
// interleave their elements.
func TestPipelineCommandsAreContiguous(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, conn.Config{Addr: srv.Addr(), PoolSize: 2})
	ctx := ctxT(t)
	const goroutines, batches, size = 16, 50, 5
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				cmds := make([]conn.Cmd, size)
				for i := range cmds {
					cmds[i] = conn.Cmd{Args: []string{"RPUSH", "list", fmt.Sprintf("%d/%d/%d", g, b, i)}}
				}
				for _, f := range c.Pipeline(ctx, cmds...) {
					if _, err := f.Get(ctx); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	items, err := srv.DoStrings(context.Background(), "LRANGE", "list", "0", "-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != goroutines*batches*size {
		t.Fatalf("%d items; want %d", len(items), goroutines*batches*size)
	}
	for i := 0; i < len(items); i += size {
		var g, b, j int
		fmt.Sscanf(items[i], "%d/%d/%d", &g, &b, &j)
		for k := range size {
			if want := fmt.Sprintf("%d/%d/%d", g, b, k); items[i+k] != want {
				t.Fatalf("item %d = %s; want %s (a pipeline was interleaved)", i+k, items[i+k], want)
			}
		}
	}
}
