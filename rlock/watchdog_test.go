package rlock

import (
	"testing"

	"github.com/locksmith-go/locksmith/conn"
)

// Renewals share an EVALSHA when they run the same script on one server: every kind of lock of the plain layout
// (plain, fenced, fair) one script, the read-write lock's holds another; on a cluster, only keys of one slot.
func TestRenewalsAreBatchedByScriptAndSlot(t *testing.T) {
	h := func(name string, kind holdKind) *hold { return &hold{name: name, kind: kind} }
	c := &Client{}
	plain, fair := c.batchKeyOf(h("a", kindPlain)), c.batchKeyOf(h("b", kindFair))
	read, write := c.batchKeyOf(h("c", kindRead)), c.batchKeyOf(h("d", kindWrite))
	if plain != fair || read != write || plain == read {
		t.Fatalf("standalone keys: plain %v fair %v read %v write %v", plain, fair, read, write)
	}
	if plain.script != renewScript || read.script != rwRenewScript || plain.slot != noSlot {
		t.Fatalf("standalone keys: %v %v", plain, read)
	}

	c.cluster = true
	a, b := c.batchKeyOf(h("{orders}:1", kindPlain)), c.batchKeyOf(h("{orders}:2", kindFair))
	if a != b || a.slot != conn.KeySlot("orders") {
		t.Fatalf("one hash tag, one slot: %v %v", a, b)
	}
	if x := c.batchKeyOf(h("{users}:1", kindPlain)); x == a || x.slot != conn.KeySlot("users") {
		t.Fatalf("another slot, another batch: %v %v", x, a)
	}
	if r := c.batchKeyOf(h("{orders}:3", kindRead)); r == a || r.slot != a.slot {
		t.Fatalf("the read-write script on the same slot: %v %v", r, a)
	}
}
