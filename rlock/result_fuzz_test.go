package rlock

import (
	"strconv"
	"testing"

	"github.com/locksmith-go/locksmith/resp"
)

// FuzzScriptResults decodes arbitrary bytes as a RESP2 reply (as conn does) and hands the value to every function
// that turns a lock script's reply into a Go result: parseAcquire (plain, fair and read-write acquires),
// handoffGrant (the grant half of a hand-off), unlockOp.releaseOutcome (every kind's release, and the release half
// of a hand-off) in each of its states, decodeFenced (fenced acquires) and intReply (queries). A reply comes from
// redis-server, but from a script the server may not have (NOSCRIPT), an error reply, a cut or confused stream, or
// another version of the scripts: whatever it is, the decoders must not panic and must never report a grant, a
// release or a number that the reply does not say:
//   - parseAcquire: a grant only from a non-null bulk string holding a count of at least 1, a refusal only from an
//     integer (bounded by its TTL, at least 1 ms, or by recheckBound for a negative one), an error otherwise;
//   - handoffGrant: as parseAcquire, and a null is a refusal bounded by the lease;
//   - decodeFenced: a grant only from two integers of at least 1, a refusal only from an integer;
//   - releaseOutcome: never both released and an error, a resend only after adopting the server's count once;
//   - intReply: a number only from an integer, an integer string, or a null (0).
//
// Decoders found wanting by this fuzz test and by the chaos runs (a count of "0" taken for a grant; any two-element
// array, such as [1, "1"], taken for a fenced grant with token 0) now return errors (replies_test.go keeps them).
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
	checkDecodeFenced(t, v)
	if n, err := intReply(v, nil); err == nil && !isInt(v) && !v.Null {
		t.Fatalf("intReply(%v) = %d from a reply that is not a number", v, n)
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
	for _, o := range []outcome{parseAcquire(v)} {
		switch {
		case o.granted:
			n, perr := strconv.ParseInt(v.Str, 10, 64)
			if o.err != nil || v.Type != resp.BulkString || v.Null || perr != nil || n != o.count || n < 1 {
				t.Fatalf("parseAcquire(%+v) = %+v: a grant the reply does not say", v, o)
			}
		case o.err == nil:
			if v.Type != resp.Integer || o.bound != ttlBound(v.Int) || o.bound <= 0 {
				t.Fatalf("parseAcquire(%+v) = %+v: a refusal without a positive bound from a PTTL", v, o)
			}
		}
	}
}

func checkReleaseOutcome(t *testing.T, v resp.Value) {
	t.Helper()
	for _, expect := range []int64{0, 1, 3} {
		for _, retried := range []bool{false, true} {
			for _, adopted := range []bool{false, true} {
				// kindFair: the plain lock's release also hands over to its waiters (a bulk-string nonce, 2),
				// which needs a client; every kind reads the rest of the reply alike.
				op := &unlockOp{kind: kindFair, expect: expect, retried: retried, adopted: adopted}
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

func checkDecodeFenced(t *testing.T, v resp.Value) {
	t.Helper()
	o := decodeFenced(v)
	if o.granted && (o.err != nil || o.count < 1 || o.token < 1 || v.Type != resp.Array || len(v.Elems) != 2 ||
		v.Elems[0].Type != resp.Integer || v.Elems[1].Type != resp.Integer) {
		t.Fatalf("decodeFenced(%+v) = %+v: a grant the reply does not say", v, o)
	}
	if !o.granted && o.err == nil && (v.Type != resp.Integer || o.bound <= 0) {
		t.Fatalf("decodeFenced(%+v) = %+v: a refusal without a bound from a PTTL", v, o)
	}
}
