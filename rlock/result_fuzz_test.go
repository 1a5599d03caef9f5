package rlock

import (
	"strconv"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/resp"
)

// FuzzScriptResults decodes arbitrary bytes as a RESP2 reply (as conn does) and hands the value to every function
// that turns a lock script's reply into a Go result: parseAcquire (plain acquire, and the grant half of a hand-off),
// unlockOp.releaseOutcome (release, and the release half of a hand-off) in each of its states, decodeFenced and
// famDecodeCount (family acquires), famInt and intReply (queries). A reply comes from redis-server, but from a
// script the server may not have (NOSCRIPT), an error reply, a cut or confused stream, or another version of the
// scripts: whatever it is, the decoders must not panic and must never report a grant, a release or a number that
// the reply does not say:
//   - parseAcquire: a grant only from a non-null bulk string holding an integer count, a refusal only from an
//     integer (its TTL in milliseconds), "skipped" only from a null, and an error otherwise;
//   - decodeFenced, famDecodeCount: a refusal only from an integer, no grant with an error;
//   - releaseOutcome: never both released and an error, a resend only after adopting the server's count once;
//   - famInt, intReply: a number only from an integer (or an integer string, or nil for famInt).
//
// Known bugs are left out of the properties until fixed (each check says what to add back): parseAcquire and
// famDecodeCount take a bulk count of 0 or below ("0", "-5") for a grant, and decodeFenced takes any two-element
// array for a grant, reading its elements' Int fields whatever their type, so that [(integer) 1, "1"] is a grant
// with token 0 and [(nil), (integer) 812] a grant with count 0. FencedLock.Lock then returns a held context with
// token 0 and no error: chaos/bugs_test.go TestFencedLockRejectsAMalformedGrant shows it through the public API
// with a scripted server.
//
// Run it with: go test -run '^$' -fuzz '^FuzzScriptResults$' ./rlock
// The seed corpus is the replies below (what the scripts answer) plus testdata/fuzz/FuzzScriptResults.
func FuzzScriptResults(f *testing.F) {
	for _, s := range []string{
		"$1\r\n1\r\n",             // acquire: granted, hold count 1
		"$2\r\n12\r\n",            // granted, re-entered
		":29874\r\n",              // refused: the holder's PTTL
		":-1\r\n",                 // refused: a key without expiry
		":0\r\n",                  // refused in the key's last millisecond
		"$-1\r\n",                 // release: not held; hand-off: grant skipped
		":1\r\n",                  // released
		":-3\r\n",                 // release: the owner holds 3
		"*2\r\n:1\r\n$1\r\n1\r\n", // hand-off: released and granted
		"*2\r\n:0\r\n$-1\r\n",     // hand-off: partial release, no grant
		"*2\r\n$-1\r\n:812\r\n",   // hand-off: not held, lock taken by someone else
		"*2\r\n:1\r\n:42\r\n",     // fenced acquire: count 1, token 42
		"$5\r\n10110\r\n",         // renewal batch
		"-NOSCRIPT No matching script. Please use EVAL.\r\n",
		"-ERR Error running script\r\n",
		"+OK\r\n",
		"*-1\r\n",
		"*0\r\n",
	} {
		f.Add([]byte(s))
	}
	var dec resp.Decoder
	f.Fuzz(func(t *testing.T, data []byte) {
		v, _, err := dec.Decode(data)
		if err != nil {
			return
		}
		checkReply(t, v)
		for _, e := range v.Elems {
			checkReply(t, e)
		}
	})
}

func checkReply(t *testing.T, v resp.Value) {
	t.Helper()
	checkParseAcquire(t, v)
	checkReleaseOutcome(t, v)
	checkFamDecode(t, v)
	if n, err := famInt(v, nil); err == nil && !isInt(v) && !v.Null && n != 0 {
		t.Fatalf("famInt(%v) = %d from a reply that is not a number", v, n)
	}
	if _, err := intReply(v, nil); err == nil && !isInt(v) {
		t.Fatalf("intReply(%v) accepted a reply that is not a number", v)
	}
}

// isInt reports whether v is an integer, or a bulk string holding one.
func isInt(v resp.Value) bool {
	if v.Type == resp.Integer {
		return true
	}
	if v.Type == resp.BulkString && !v.Null {
		_, err := strconv.ParseInt(v.Str, 10, 64)
		return err == nil
	}
	return false
}

func checkParseAcquire(t *testing.T, v resp.Value) {
	t.Helper()
	r := parseAcquire(v, nil)
	switch {
	case r.granted:
		n, perr := strconv.ParseInt(v.Str, 10, 64)
		// Known bug (see the doc comment): a count below 1 is a grant today; add `|| r.count < 1` once fixed.
		if r.err != nil || v.Type != resp.BulkString || v.Null || perr != nil || n != r.count {
			t.Fatalf("parseAcquire(%+v) = %+v: a grant the reply does not say", v, r)
		}
	case r.skipped:
		if !v.Null || r.err != nil {
			t.Fatalf("parseAcquire(%+v) = %+v: skipped without a null", v, r)
		}
	case r.err == nil:
		if v.Type != resp.Integer || r.ttl != time.Duration(v.Int)*time.Millisecond {
			t.Fatalf("parseAcquire(%+v) = %+v: a refusal without a PTTL", v, r)
		}
	}
}

func checkReleaseOutcome(t *testing.T, v resp.Value) {
	t.Helper()
	for _, expect := range []int64{0, 1, 3} {
		for _, retried := range []bool{false, true} {
			for _, adopted := range []bool{false, true} {
				op := &unlockOp{expect: expect, retried: retried, adopted: adopted}
				released, err, resend := op.releaseOutcome(v)
				if released && err != nil {
					t.Fatalf("releaseOutcome(%+v) with %+v: released and %v", v, op, err)
				}
				if resend && (released || err != nil || adopted || !op.adopted) {
					t.Fatalf("releaseOutcome(%+v) with expect %d retried %v adopted %v: resend %v released %v err %v",
						v, expect, retried, adopted, resend, released, err)
				}
				if released && !(v.Type == resp.Integer && v.Int == 1) && !(v.Null && retried && expect == 1) {
					t.Fatalf("releaseOutcome(%+v) with %+v: released from a reply that does not say so", v, op)
				}
				if !v.Null && v.Type != resp.Integer && err == nil {
					t.Fatalf("releaseOutcome(%+v): no error for a reply that is neither nil nor an integer", v)
				}
			}
		}
	}
}

func checkFamDecode(t *testing.T, v resp.Value) {
	t.Helper()
	granted, count, token, retry, err := decodeFenced(v)
	// Known bug (see the doc comment): any two-element array is a grant today. Once decodeFenced checks its
	// elements, make this `granted && (err != nil || count < 1 || token < 1)`.
	if granted && (err != nil || v.Type != resp.Array || len(v.Elems) != 2) {
		t.Fatalf("decodeFenced(%+v) = granted, count %d, token %d, %v: a grant the reply does not say", v, count, token, err)
	}
	if !granted && err == nil && v.Type != resp.Integer {
		t.Fatalf("decodeFenced(%+v): a refusal (retry %v) without a PTTL", v, retry)
	}
	granted, count, _, retry, err = famDecodeCount(v)
	// Known bug (see the doc comment): add `|| count < 1` once fixed.
	if granted && err != nil {
		t.Fatalf("famDecodeCount(%+v) = granted, count %d, %v: a grant the reply does not say", v, count, err)
	}
	if !granted && err == nil && v.Type != resp.Integer {
		t.Fatalf("famDecodeCount(%+v): a refusal (retry %v) without a PTTL", v, retry)
	}
}
