package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClusterComesUpHealthyWithThreeMastersAndReplicas(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := StartCluster(t)
	t.Logf("cluster healthy after %v", time.Since(start))
	ctx := testCtx(t)

	require.Len(t, c.Addrs(), 6)
	masters, err := c.Masters(ctx)
	require.NoError(t, err)
	require.Len(t, masters, 3)
	replicas, err := c.Replicas(ctx)
	require.NoError(t, err)
	require.Len(t, replicas, 3)

	for _, slot := range []int{0, 5460, 5461, 10922, 10923, 16383} {
		n, err := c.NodeForSlot(ctx, slot)
		require.NoError(t, err)
		assert.Contains(t, masters, n)
	}
	_, err = c.NodeForSlot(ctx, 16384)
	assert.Error(t, err)

	// Hash tags: {user1}.a and {user1}.b share a slot, as Redis defines it.
	s1, err := c.KeySlot(ctx, "{user1}.a")
	require.NoError(t, err)
	s2, err := c.KeySlot(ctx, "{user1}.b")
	require.NoError(t, err)
	assert.Equal(t, s1, s2)

	// The owner accepts the key; any other master redirects with MOVED.
	owner, err := c.NodeForKey(ctx, "foo")
	require.NoError(t, err)
	_, err = owner.Do(ctx, "SET", "foo", "bar")
	require.NoError(t, err)
	for _, m := range masters {
		if m == owner {
			continue
		}
		_, err = m.Do(ctx, "GET", "foo")
		var re *ReplyError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, "MOVED", re.Prefix())
	}
}

func TestClusterKillMasterPromotesItsReplicaAndOldMasterRejoins(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, WithPassword("pw"))
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	owner, err := c.NodeForKey(ctx, "k")
	require.NoError(t, err)
	_, err = owner.Do(ctx, "SET", "k", "v")
	require.NoError(t, err)
	_, err = owner.Do(ctx, "WAIT", "1", "5000")
	require.NoError(t, err)
	slot, err := c.KeySlot(ctx, "k")
	require.NoError(t, err)

	start := time.Now()
	old, promoted, err := c.KillMaster(ctx, slot)
	require.NoError(t, err)
	t.Logf("cluster failover after SIGKILL of a master took %v", time.Since(start))
	assert.Same(t, owner, old)
	assert.NotSame(t, old, promoted)
	v, err := promoted.DoString(ctx, "GET", "k")
	require.NoError(t, err)
	assert.Equal(t, "v", v, "the replica had the write")

	start = time.Now()
	require.NoError(t, old.Restart())
	require.NoError(t, c.WaitHealthy(ctx))
	t.Logf("old master rejoined after %v", time.Since(start))
	replicas, err := c.Replicas(ctx)
	require.NoError(t, err)
	assert.Contains(t, replicas, old)
}

func TestClusterWithTLSAndCloseLeavesNoProcess(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c, err := RunCluster(WithTLS())
	require.NoError(t, err)
	t.Logf("TLS cluster healthy after %v", time.Since(start))
	require.NotNil(t, c.TLSConfig())
	ctx := testCtx(t)
	n, err := c.NodeForKey(ctx, "x")
	require.NoError(t, err)
	_, err = n.Do(ctx, "SET", "x", "1")
	require.NoError(t, err)

	var pids []int
	for _, s := range c.Nodes() {
		pids = append(pids, s.Pid())
	}
	start = time.Now()
	require.NoError(t, c.Close())
	t.Logf("cluster Close took %v", time.Since(start))
	for _, pid := range pids {
		assert.True(t, processGone(pid), "pid %d", pid)
	}
}

func TestParseClusterNodes(t *testing.T) {
	text := "07c3 127.0.0.1:30004@40004,host slave e7d1 0 1426238317239 4 connected\n" +
		"67ed 127.0.0.1:30002@40002 master - 0 1426238316232 2 connected 5461-10922 [10923->-292f]\n" +
		"e7d1 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460 16383\n" +
		"292f 127.0.0.1:30003@40003 master,fail? - 0 0 3 disconnected 10923-16382\n"
	nodes, err := parseClusterNodes(text)
	require.NoError(t, err)
	require.Len(t, nodes, 4)
	assert.Equal(t, 30004, nodes[0].port)
	assert.False(t, nodes[0].master)
	assert.Equal(t, "e7d1", nodes[0].masterID)
	assert.True(t, nodes[1].owns(10922))
	assert.False(t, nodes[1].owns(10923), "a migrating slot stays with its plain owner")
	assert.True(t, nodes[2].myself)
	assert.True(t, nodes[2].owns(16383))
	assert.Equal(t, 5462, nodes[2].slotCount())
	assert.True(t, nodes[3].failed)
	assert.False(t, nodes[3].linkUp)
	_, err = parseClusterNodes("bad line")
	assert.Error(t, err)
}
