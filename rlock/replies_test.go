package rlock

import (
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/resp"
)

func TestParseAcquire(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    resp.Value
		want outcome
	}{
		{"granted", resp.Value{Type: resp.BulkString, Str: "3"}, outcome{granted: true, count: 3}},
		{"refused", resp.Value{Type: resp.Integer, Int: 1500}, outcome{bound: 1500 * time.Millisecond}},
		// A key in its last millisecond answers 0; its expiry publishes nothing, so the wait must still be bounded.
		{"refused, expiring", resp.Value{Type: resp.Integer, Int: 0}, outcome{bound: time.Millisecond}},
		{"no expiry", resp.Value{Type: resp.Integer, Int: -1}, outcome{bound: recheckBound}},
	} {
		if got := parseAcquire(tc.v); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	for name, v := range map[string]resp.Value{
		"a status reply":         {Type: resp.SimpleString, Str: "OK"},
		"a non-numeric count":    {Type: resp.BulkString, Str: "x"},
		"a count of 0":           {Type: resp.BulkString, Str: "0"},
		"a negative count":       {Type: resp.BulkString, Str: "-5"},
		"a null (not a refusal)": {Type: resp.BulkString, Null: true},
	} {
		if o := parseAcquire(v); o.err == nil || o.granted {
			t.Errorf("%s parsed as %+v", name, o)
		}
	}
}

func TestDecodeFencedAcceptsOnlyTwoPositiveIntegers(t *testing.T) {
	i := func(n int64) resp.Value { return resp.Value{Type: resp.Integer, Int: n} }
	arr := func(e ...resp.Value) resp.Value { return resp.Value{Type: resp.Array, Elems: e} }
	if o := decodeFenced(arr(i(2), i(42))); !o.granted || o.count != 2 || o.token != 42 || o.err != nil {
		t.Errorf("a grant: %+v", o)
	}
	if o := decodeFenced(i(900)); o.granted || o.err != nil || o.bound != 900*time.Millisecond {
		t.Errorf("a refusal: %+v", o)
	}
	for name, v := range map[string]resp.Value{
		"a bulk token": arr(i(1), resp.Value{Type: resp.BulkString, Str: "1"}),
		"a null count": arr(resp.Value{Type: resp.BulkString, Null: true}, i(812)),
		"token 0":      arr(i(1), i(0)),
		"count 0":      arr(i(0), i(3)),
		"three items":  arr(i(1), i(2), i(3)),
		"a status":     {Type: resp.SimpleString, Str: "OK"},
	} {
		if o := decodeFenced(v); o.granted || o.err == nil {
			t.Errorf("%s decoded as %+v, want an error", name, o)
		}
	}
}

func TestReleaseOutcome(t *testing.T) {
	null := resp.Value{Type: resp.BulkString, Null: true}
	num := func(n int64) resp.Value { return resp.Value{Type: resp.Integer, Int: n} }
	for _, tc := range []struct {
		name             string
		expect           int64
		retried          bool
		v                resp.Value
		released, resend bool
		err              error
		expectAfter      int64
	}{
		{"released", 1, false, num(1), true, false, nil, 1},
		{"partial", 2, false, num(0), false, false, nil, 2},
		{"not held", 1, false, null, false, false, ErrNotHeld, 1},
		{"not held, unconditional", 0, false, null, false, false, ErrNotHeld, 0},
		{"retry after the delete ran", 1, true, null, true, false, nil, 1},
		{"retry of a partial that ran", 3, true, num(-2), false, false, nil, 3},
		{"retry of a partial, key gone", 3, true, null, false, false, ErrNotHeld, 3},
		{"count differs: adopt", 1, false, num(-3), false, true, nil, 3},
	} {
		op := &unlockOp{expect: tc.expect, retried: tc.retried}
		released, err, resend := op.releaseOutcome(tc.v)
		if released != tc.released || resend != tc.resend || !errors.Is(err, tc.err) || (tc.err == nil && err != nil) || op.expect != tc.expectAfter {
			t.Errorf("%s: released %v resend %v err %v expect %d; want %v %v %v %d", tc.name, released, resend, err,
				op.expect, tc.released, tc.resend, tc.err, tc.expectAfter)
		}
	}
	op := &unlockOp{expect: 1, adopted: true}
	if _, err, resend := op.releaseOutcome(num(-4)); resend || !errors.Is(err, ErrNotHeld) {
		t.Errorf("second mismatch: resend %v err %v, want ErrNotHeld without resend", resend, err)
	}
}

func TestConfigDefaults(t *testing.T) {
	r, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if r.WatchdogTimeout != DefaultWatchdogTimeout || r.RenewBatchSize != DefaultRenewBatchSize ||
		r.RetryAttempts != DefaultRetryAttempts || r.RetryDelay != DefaultRetryDelay || r.Logger == nil || r.Observer == nil {
		t.Fatalf("defaults not applied: %+v", r.Config)
	}
	if r.watchdogMillis != "30000" || r.renewEvery != 10*time.Second || r.flushDelay != time.Second {
		t.Fatalf("derived: %q %v %v", r.watchdogMillis, r.renewEvery, r.flushDelay)
	}
	r, _ = Config{WatchdogTimeout: 3 * time.Second, RetryAttempts: -1}.withDefaults()
	if r.flushDelay != 100*time.Millisecond || r.RetryAttempts != 0 {
		t.Fatalf("3 s watchdog: flush %v, retries %d", r.flushDelay, r.RetryAttempts)
	}
	for name, cfg := range map[string]Config{
		"sub-ms watchdog":   {WatchdogTimeout: time.Microsecond},
		"negative watchdog": {WatchdogTimeout: -time.Second},
		"negative batch":    {RenewBatchSize: -1},
		"negative delay":    {RetryDelay: -time.Second},
	} {
		if _, err := cfg.withDefaults(); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want ErrInvalidArgument", name, err)
		}
	}
}
