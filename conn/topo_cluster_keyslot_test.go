package conn_test

import (
	"math/rand/v2"
	"testing"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/future"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
)

func TestKeySlotKnownValuesAndHashTags(t *testing.T) {
	// 0x31C3 is CRC-16/XMODEM's check value for "123456789"; 12182 is CLUSTER KEYSLOT foo.
	for key, want := range map[string]int{"123456789": 0x31C3, "foo": 12182, "": 0} {
		if got := conn.KeySlot(key); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
	for key, hashed := range map[string]string{
		"{user1000}.following": "user1000",
		"foo{bar}{zap}":        "bar",        // the first '{' and the first '}' after it
		"foo{{bar}}zap":        "{bar",       // the tag may contain '{'
		"foo{}{bar}":           "foo{}{bar}", // an empty tag hashes the whole key
		"{}":                   "{}",
		"foo{bar":              "foo{bar", // no closing brace
		"foo}bar{":             "foo}bar{",
		"a}{b}":                "b",
		"{a}":                  "a",
	} {
		if got, want := conn.KeySlot(key), conn.KeySlot(hashed); got != want {
			t.Errorf("KeySlot(%q) = %d, want KeySlot(%q) = %d", key, got, hashed, want)
		}
	}
}

// keySlotSamples returns keys covering the hash-tag rules and random bytes, including non-ASCII ones.
func keySlotSamples(n int) []string {
	keys := []string{"", "{", "}", "{}", "}{", "{{}}", "{a", "a}", "{a}{b}", "a{b}c{d}", "{{a}}", "x{}y{z}",
		"redisson_lock__channel:{order:42}", "lock:{é}", "\x00\xff{\x01}"}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab{}:\x00\xfe")
	for len(keys) < n {
		b := make([]byte, r.IntN(12))
		for i := range b {
			if r.IntN(3) == 0 {
				b[i] = byte(r.IntN(256))
			} else {
				b[i] = alphabet[r.IntN(len(alphabet))]
			}
		}
		keys = append(keys, string(b))
	}
	return keys
}

func TestKeySlotMatchesClusterKeyslot(t *testing.T) {
	cl := redistest.StartCluster(t)
	c := newClient(t, conn.Config{ClusterAddrs: cl.Addrs()[:1]})
	ctx := ctxT(t)
	keys := keySlotSamples(3000)
	futs := make([]*future.Future[resp.Value], len(keys))
	for i, k := range keys {
		futs[i] = c.Do(ctx, "CLUSTER", "KEYSLOT", k) // keyless: any master answers
	}
	for i, f := range futs {
		v, err := f.Get(ctx)
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %q: %v", keys[i], err)
		}
		if got := conn.KeySlot(keys[i]); int64(got) != v.Int {
			t.Errorf("KeySlot(%q) = %d, server says %d", keys[i], got, v.Int)
		}
	}
	// The test helper agrees too (it asks the cluster).
	for _, k := range keys[:20] {
		s, err := cl.KeySlot(ctx, k)
		if err != nil || s != conn.KeySlot(k) {
			t.Fatalf("redistest KeySlot(%q) = %d, %v; conn says %d", k, s, err, conn.KeySlot(k))
		}
	}
}
