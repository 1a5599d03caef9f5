package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReplicaSetComesUpHealthyAndReplicates(t *testing.T) {
	t.Parallel()
	start := time.Now()
	rs := StartReplicaSet(t)
	t.Logf("replica set healthy after %v", time.Since(start))
	ctx := testCtx(t)

	require.Len(t, rs.Nodes(), 3)
	require.Len(t, rs.SentinelAddrs(), 3)
	assert.Equal(t, MasterName, rs.MasterName())
	m, err := rs.Master(ctx)
	require.NoError(t, err)
	assert.Same(t, rs.Nodes()[0], m)
	reps, err := rs.Replicas(ctx)
	require.NoError(t, err)
	require.Len(t, reps, 2)

	_, err = m.Do(ctx, "SET", "k", "v")
	require.NoError(t, err)
	n, err := m.DoInt(ctx, "WAIT", "2", "5000")
	require.NoError(t, err)
	assert.EqualValues(t, 2, n, "both replicas acknowledge")
	for _, r := range reps {
		v, err := r.DoString(ctx, "GET", "k")
		require.NoError(t, err)
		assert.Equal(t, "v", v)
	}
	for _, s := range rs.Sentinels() {
		got, err := s.DoStrings(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", rs.MasterName())
		require.NoError(t, err)
		assert.Equal(t, []string{"127.0.0.1", itoa(m.Port())}, got)
	}
}

func TestReplicaSetKillMasterFailsOverAndOldMasterRejoinsAsReplica(t *testing.T) {
	t.Parallel()
	rs := StartReplicaSet(t, WithPassword("pw"))
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()

	start := time.Now()
	old, promoted, err := rs.KillMaster(ctx)
	require.NoError(t, err)
	t.Logf("failover after SIGKILL of the master took %v", time.Since(start))
	assert.NotSame(t, old, promoted)
	assert.False(t, old.Running())
	m, err := rs.Master(ctx)
	require.NoError(t, err)
	assert.Same(t, promoted, m)
	_, err = promoted.Do(ctx, "SET", "after", "failover")
	require.NoError(t, err)

	start = time.Now()
	require.NoError(t, rs.Rejoin(ctx, old))
	t.Logf("old master rejoined as a replica after %v", time.Since(start))
	info, err := old.Info(ctx, "replication")
	require.NoError(t, err)
	assert.Equal(t, "slave", info["role"])
	assert.Equal(t, itoa(promoted.Port()), info["master_port"])
}

func TestReplicaSetGracefulFailoverWithTLS(t *testing.T) {
	t.Parallel()
	start := time.Now()
	rs := StartReplicaSet(t, WithTLS())
	t.Logf("TLS replica set healthy after %v", time.Since(start))
	require.NotNil(t, rs.TLSConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start = time.Now()
	old, promoted, err := rs.Failover(ctx)
	require.NoError(t, err)
	t.Logf("SENTINEL FAILOVER took %v", time.Since(start))
	assert.NotSame(t, old, promoted)
	_, err = promoted.Do(ctx, "SET", "k", "v")
	require.NoError(t, err, "the promoted node accepts writes")
	// The Sentinels demote the old master only after their fixed 8 s settle
	// time, so WaitHealthy is not awaited here.
}

func TestReplicaSetCloseLeavesNoProcess(t *testing.T) {
	t.Parallel()
	rs, err := RunReplicaSet()
	require.NoError(t, err)
	var pids []int
	for _, s := range append(rs.Nodes(), rs.Sentinels()...) {
		pids = append(pids, s.Pid())
	}
	start := time.Now()
	require.NoError(t, rs.Close())
	t.Logf("replica set Close took %v", time.Since(start))
	for _, pid := range pids {
		assert.True(t, processGone(pid), "pid %d", pid)
	}
	assert.NoError(t, rs.Close(), "second Close")
}
