package conn_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/resp"
)

// setUserOnEveryNode runs ACL SETUSER name rules... on each node: ACLs are per node, a cluster does not share them.
func setUserOnEveryNode(t *testing.T, ctx context.Context, cl *redistest.Cluster, name string, rules ...string) {
	t.Helper()
	for _, n := range cl.Nodes() {
		if _, err := n.Do(ctx, append([]string{"ACL", "SETUSER", name}, rules...)...); err != nil {
			t.Fatalf("ACL SETUSER %s on %s: %v", name, n.Addr(), err)
		}
	}
}

// The slot map is read with CLUSTER SLOTS when the user may not run CLUSTER SHARDS; a user refused both gets
// ErrAuth naming the rules to grant, from New, and, with LazyConnect, from every command and subscription at once
// (no retries ending in ErrUnavailable), until the ACL is fixed.
func TestClusterSlotMapUnderACL(t *testing.T) {
	cl := redistest.StartCluster(t)
	ctx := ctxT(t)
	setUserOnEveryNode(t, ctx, cl, "slotsonly", "reset", "on", ">pw", "~*", "&*", "+@all", "-cluster|shards")
	setUserOnEveryNode(t, ctx, cl, "nomap", "reset", "on", ">pw", "~*", "&*", "+@all", "-cluster|shards",
		"-cluster|slots")

	t.Run("CLUSTER SLOTS when CLUSTER SHARDS is refused", func(t *testing.T) {
		c := newClient(t, conn.Config{ClusterAddrs: cl.Addrs()[:1], Username: "slotsonly", Password: "pw"})
		for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
			if _, err := c.Do(ctx, "SET", k, "v").Get(ctx); err != nil {
				t.Fatalf("SET %s as a user without CLUSTER SHARDS: %v", k, err)
			}
			owner, err := cl.NodeForKey(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if v, err := owner.DoString(ctx, "GET", k); err != nil || v != "v" {
				t.Fatalf("GET %s on its owner = %q, %v: the map read with CLUSTER SLOTS routed it elsewhere", k, v, err)
			}
		}
	})

	t.Run("ErrAuth from New when both are refused", func(t *testing.T) {
		c, err := conn.New(conn.Config{ClusterAddrs: cl.Addrs()[:2], Username: "nomap", Password: "pw"})
		if err == nil {
			c.Close()
			t.Fatal("New succeeded without the slot map")
		}
		checkSlotMapRefusal(t, err)
	})

	t.Run("ErrAuth from every command of a lazy Client, until the ACL is fixed", func(t *testing.T) {
		// A retry timeout far beyond the context: a command that retried would end with the context, not ErrAuth.
		c := newClient(t, conn.Config{ClusterAddrs: cl.Addrs(), Username: "nomap", Password: "pw", LazyConnect: true,
			RetryTimeout: time.Hour})
		_, err := c.Do(ctx, "SET", "k", "v").Get(ctx)
		checkSlotMapRefusal(t, err)
		_, err = c.Subscribe("ch", func(conn.Message) {}).Get(ctx)
		checkSlotMapRefusal(t, err)
		fs := c.Pipeline(ctx, conn.Cmd{Args: []string{"SET", "k", "v"}})
		_, err = fs[0].Get(ctx)
		checkSlotMapRefusal(t, err)

		setUserOnEveryNode(t, ctx, cl, "nomap", "+cluster|slots")
		eventually(t, func() error {
			_, err := c.Do(ctx, "SET", "k", "v").Get(ctx)
			return err
		})
	})
}

// checkSlotMapRefusal fails t unless err is the refusal of the slot map: ErrAuth and the server's NOPERM, not
// ErrUnavailable, naming the ACL rules that fix it.
func checkSlotMapRefusal(t *testing.T, err error) {
	t.Helper()
	var se *resp.ServerError
	switch {
	case !errors.Is(err, conn.ErrAuth):
		t.Fatalf("err = %v; want ErrAuth", err)
	case errors.Is(err, conn.ErrUnavailable):
		t.Fatalf("err = %v matches ErrUnavailable: a refusal is not worth retrying", err)
	case !errors.As(err, &se) || se.Prefix != "NOPERM":
		t.Fatalf("err = %v; want the server's NOPERM inside", err)
	case !strings.Contains(err.Error(), "+cluster|slots") || !strings.Contains(err.Error(), "+cluster|shards"):
		t.Fatalf("err = %v; want it to name the ACL rules to grant", err)
	}
}
