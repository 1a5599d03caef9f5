package integration

import (
	"context"
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// The cluster rules of docs/acl.md ("Redis Cluster"): on every node of a six-node cluster, a user with a kind's
// rules, sharded pub/sub in place of plain pub/sub, and the cluster's own rules runs the kind's scenario (the one
// the standalone test runs) without a single refusal on any node. INFO commandstats shows that each of the
// cluster's rules is used, so none is there for nothing, and that the plain pub/sub commands are not.

// aclClusterSection is the heading of the cluster's rules in docs/acl.md.
const aclClusterSection = "## Redis Cluster"

// aclShardedRules are the rules that take the place of the plain pub/sub rules on a cluster with sharded pub/sub.
var aclShardedRules = map[string]string{"+publish": "+spublish", "+subscribe": "+ssubscribe", "+unsubscribe": "+sunsubscribe"}

// aclClusterRules reads the rules of the acl code blocks of docs/acl.md's cluster section.
func aclClusterRules(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(aclDoc)
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	in, inBlock := false, false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == aclClusterSection
		case line == "```acl":
			inBlock = true
		case line == "```":
			inBlock = false
		case in && inBlock:
			rules = append(rules, strings.Fields(line)...)
		}
	}
	if len(rules) == 0 {
		t.Fatalf("%s has no rules in %q", aclDoc, aclClusterSection)
	}
	return rules
}

// aclClusterKindRules is a kind's rules on a cluster as docs/acl.md says: sharded pub/sub in place of plain
// pub/sub, and the cluster's own rules.
func aclClusterKindRules(kindRules, clusterRules []string) []string {
	out := make([]string, 0, len(kindRules)+len(clusterRules))
	for _, r := range kindRules {
		if s, ok := aclShardedRules[r]; ok {
			r = s
		}
		out = append(out, r)
	}
	return append(out, clusterRules...)
}

// setUserOnEveryNode runs ACL SETUSER (args) on every node: a cluster does not share its users.
func setUserOnEveryNode(t *testing.T, cl *redistest.Cluster, args []string) {
	t.Helper()
	for _, n := range cl.Nodes() {
		if _, err := n.Do(context.Background(), args...); err != nil {
			t.Fatalf("%v on %s: %v", args[:3], n.Addr(), err)
		}
	}
}

// clusterCalls sums INFO commandstats' calls of command over the nodes.
func clusterCalls(t *testing.T, cl *redistest.Cluster, command string) (n int64) {
	t.Helper()
	for _, s := range cl.Nodes() {
		n += callsOf(t, s, command)
	}
	return n
}

func TestACLClusterEachKindRunsWithItsMinimalACL(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs a six-node cluster")
	}
	cl := redistest.StartCluster(t)
	ctx := ctxT(t, 2*time.Minute)
	rules, clusterRules := aclRules(t), aclClusterRules(t)
	for _, n := range cl.Nodes() {
		if _, err := n.Do(ctx, "CONFIG", "RESETSTAT"); err != nil {
			t.Fatal(err)
		}
	}
	ran := 0
	for _, kind := range slices.Sorted(maps.Keys(aclScenarios)) {
		t.Run(kind, func(t *testing.T) {
			name, user := "app:"+kind, "u-"+kind
			setUserOnEveryNode(t, cl, aclSetUser(t, user, aclClusterKindRules(rules[kind], clusterRules), name))
			runACLScenario(t, kind, name, conn.Config{ClusterAddrs: cl.Addrs(), Username: user, Password: "pw"},
				cl.Nodes()...)
			ran++
		})
	}

	// A lock taken while its slot migrates: the source node redirects the script with ASK, and the client sends
	// ASKING before it on the destination (which answers TRYAGAIN until the migration ends: the script's keys are
	// not all there).
	t.Run("Lock while its slot migrates", func(t *testing.T) {
		name, user := "app:migrating", "u-migrating"
		setUserOnEveryNode(t, cl, aclSetUser(t, user, aclClusterKindRules(rules["Lock"], clusterRules), name))
		c := newClusterACLClient(t, cl, user)
		for _, n := range cl.Nodes() {
			if _, err := n.Do(ctx, "ACL", "LOG", "RESET"); err != nil {
				t.Fatal(err)
			}
		}
		slot := conn.KeySlot(name)
		src, err := cl.NodeForSlot(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		dst := anotherMaster(t, ctx, cl, src)
		asking := callsOf(t, dst, "asking")
		mg, err := cl.StartMigration(ctx, slot, src, dst)
		if err != nil {
			t.Fatal(err)
		}
		f := c.Lock(name).LockAsync(ctx)
		eventually(t, 5*time.Second, "ASKING on the destination", func() bool { return callsOf(t, dst, "asking") > asking })
		if _, err := mg.MoveAll(ctx, 10, nil); err != nil {
			t.Fatal(err)
		}
		if err := mg.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		held, err := f.Get(ctx)
		if err != nil {
			t.Fatalf("Lock across the migration: %v", err)
		}
		if err := c.Lock(name).Unlock(held); err != nil {
			t.Fatal(err)
		}
		c.Close()
		for _, n := range cl.Nodes() {
			if log := aclLog(t, n); len(log) != 0 {
				t.Errorf("%s refused the user %d times; first: %v", n.Addr(), len(log), log[0])
			}
		}
		ran++
	})

	if ran == len(aclScenarios)+1 { // every scenario ran (not a -run selection): every rule had its chance
		for _, r := range clusterRules {
			if cmd := strings.TrimPrefix(r, "+"); cmd != r && clusterCalls(t, cl, cmd) == 0 {
				t.Errorf("%s documents %s for a cluster, but no node ran %s", aclDoc, r, cmd)
			}
		}
		for plain, sharded := range aclShardedRules {
			if n := clusterCalls(t, cl, plain[1:]); n != 0 {
				t.Errorf("the nodes ran %s %d times: the clients should use %s", plain[1:], n, sharded[1:])
			}
			if clusterCalls(t, cl, sharded[1:]) == 0 {
				t.Errorf("%s documents %s for a cluster, but no node ran it", aclDoc, sharded)
			}
		}
		if n := clusterCalls(t, cl, "cluster|slots"); n != 0 {
			t.Errorf("the nodes ran CLUSTER SLOTS %d times although the users may run CLUSTER SHARDS", n)
		}
	}

	// CLUSTER SLOTS in place of CLUSTER SHARDS: the client falls back to it; the only refusal is the one
	// CLUSTER SHARDS each client tried first.
	t.Run("cluster|slots in place of cluster|shards", func(t *testing.T) {
		name, user := "app:slots", "u-slots"
		var lockRules []string
		for _, r := range aclClusterKindRules(rules["Lock"], clusterRules) {
			if r == "+cluster|shards" {
				r = "+cluster|slots"
			}
			lockRules = append(lockRules, r)
		}
		setUserOnEveryNode(t, cl, aclSetUser(t, user, lockRules, name))
		for _, n := range cl.Nodes() {
			if _, err := n.Do(ctx, "ACL", "LOG", "RESET"); err != nil {
				t.Fatal(err)
			}
		}
		a := newClusterACLClient(t, cl, user)
		b := newClusterACLClient(t, cl, user)
		aclLockScenario(t, ctx, a, b, name, func() {})
		a.Close()
		b.Close()
		for _, n := range cl.Nodes() {
			for _, e := range aclLog(t, n) {
				if e["object"] != "cluster|shards" || e["username"] != user {
					t.Errorf("%s refused %v", n.Addr(), e)
				}
			}
		}
	})

	t.Run("neither cluster|shards nor cluster|slots", func(t *testing.T) {
		user := "u-nomap"
		var noMap []string
		for _, r := range aclClusterKindRules(rules["Lock"], clusterRules) {
			if r != "+cluster|shards" {
				noMap = append(noMap, r)
			}
		}
		setUserOnEveryNode(t, cl, aclSetUser(t, user, noMap, "app:nomap"))
		c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{ClusterAddrs: cl.Addrs(), Username: user, Password: "pw"}})
		if err == nil {
			c.Close()
			t.Fatal("NewClient succeeded without the slot map")
		}
		if !errors.Is(err, conn.ErrAuth) || errors.Is(err, conn.ErrUnavailable) {
			t.Fatalf("NewClient: %v; want conn.ErrAuth, not conn.ErrUnavailable", err)
		}
		if !strings.Contains(err.Error(), "+cluster|slots") {
			t.Fatalf("NewClient: %v; want the rules to grant named", err)
		}
	})
}

// newClusterACLClient makes an rlock client of cl as user (password "pw"), closed when the test ends.
func newClusterACLClient(t *testing.T, cl *redistest.Cluster, user string) *rlock.Client {
	t.Helper()
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{ClusterAddrs: cl.Addrs(), Username: user, Password: "pw"}})
	if err != nil {
		t.Fatalf("NewClient as %s: %v", user, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
