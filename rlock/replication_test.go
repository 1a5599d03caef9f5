package rlock

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
)

// The replica-synced acquire's configuration and error; its behaviour against real replicas is tested in
// integration (replication_sync_test.go).

func TestSyncConfig(t *testing.T) {
	r, err := Config{SyncReplicas: 2}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if r.SyncReplicas != 2 || r.SyncTimeout != DefaultSyncTimeout {
		t.Fatalf("SyncReplicas 2: got %d, %v; want 2, %v", r.SyncReplicas, r.SyncTimeout, DefaultSyncTimeout)
	}
	r, err = Config{SyncReplicas: 1, SyncTimeout: 50 * time.Millisecond}.withDefaults()
	if err != nil || r.SyncTimeout != 50*time.Millisecond {
		t.Fatalf("explicit timeout: %v, %v", r.SyncTimeout, err)
	}
	r, err = Config{}.withDefaults()
	if err != nil || r.SyncReplicas != 0 || r.SyncTimeout != 0 {
		t.Fatalf("off by default: %d, %v, %v", r.SyncReplicas, r.SyncTimeout, err)
	}
	for name, cfg := range map[string]Config{
		"negative replicas":            {SyncReplicas: -1},
		"timeout without replicas":     {SyncTimeout: time.Second},
		"negative timeout":             {SyncReplicas: 1, SyncTimeout: -time.Second},
		"sub-ms timeout":               {SyncReplicas: 1, SyncTimeout: time.Microsecond},
		"timeout at response timeout":  {SyncReplicas: 1, SyncTimeout: conn.DefaultResponseTimeout},
		"timeout over a short one":     {SyncReplicas: 1, SyncTimeout: time.Second, Conn: conn.Config{ResponseTimeout: time.Second}},
		"default over a short one":     {SyncReplicas: 1, Conn: conn.Config{ResponseTimeout: 100 * time.Millisecond}},
		"default over a shorter one 2": {SyncReplicas: 1, Conn: conn.Config{ResponseTimeout: DefaultSyncTimeout}},
	} {
		_, err := cfg.withDefaults()
		var ae *ArgumentError
		if !errors.As(err, &ae) || !strings.HasPrefix(ae.Arg, "Sync") {
			t.Errorf("%s: err = %v, want an *ArgumentError on SyncReplicas or SyncTimeout", name, err)
		}
	}
}

func TestReplicationError(t *testing.T) {
	cause := &conn.ConnError{Addr: "127.0.0.1:1", Err: conn.ErrConnLost}
	e := &ReplicationError{Name: "orders", Wanted: 2, Acked: 1, Timeout: 200 * time.Millisecond, Attempts: 4,
		Released: true}
	if !errors.Is(e, ErrNotReplicated) || errors.Is(e, ErrNotAcquired) {
		t.Fatalf("errors.Is: ErrNotReplicated %v, ErrNotAcquired %v; want true, false",
			errors.Is(e, ErrNotReplicated), errors.Is(e, ErrNotAcquired))
	}
	for _, want := range []string{`"orders"`, "1 of 2 replicas", "200ms", "4 attempts", "was released", "SyncReplicas"} {
		if !strings.Contains(e.Error(), want) {
			t.Errorf("message %q lacks %q", e.Error(), want)
		}
	}
	e.Err, e.Released = cause, false
	if !errors.Is(e, conn.ErrConnLost) || !errors.Is(e, ErrNotReplicated) {
		t.Fatalf("with a cause: errors.Is ErrConnLost %v, ErrNotReplicated %v", errors.Is(e, conn.ErrConnLost),
			errors.Is(e, ErrNotReplicated))
	}
	if !strings.Contains(e.Error(), "ends with its lease") {
		t.Errorf("message %q does not say the grant stays until its lease ends", e.Error())
	}
}
