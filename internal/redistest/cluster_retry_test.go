package redistest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withFormBounds makes attempt n of RunCluster bounded by bounds[n-1] for the rest of the test. The test must not
// be parallel: the bound is package state.
func withFormBounds(t *testing.T, bounds ...time.Duration) *[]int {
	t.Helper()
	var attempts []int
	saved := clusterFormBound
	clusterFormBound = func(n int) time.Duration {
		attempts = append(attempts, n)
		return bounds[min(n, len(bounds))-1]
	}
	t.Cleanup(func() { clusterFormBound = saved })
	return &attempts
}

func TestRunClusterStartsAnotherWhenOneDoesNotForm(t *testing.T) {
	attempts := withFormBounds(t, time.Nanosecond, topologyTimeoutFactor*StartTimeout)
	c, err := RunCluster()
	require.NoError(t, err)
	defer func() { assert.NoError(t, c.Close()) }()
	assert.Equal(t, []int{1, 2}, *attempts)

	masters, err := c.Masters(testCtx(t))
	require.NoError(t, err)
	assert.Len(t, masters, 3, "the second cluster formed")
}

func TestRunClusterGivesUpWithTheNodesLogs(t *testing.T) {
	attempts := withFormBounds(t, time.Nanosecond)
	c, err := RunCluster()
	require.Error(t, err)
	assert.Nil(t, c)
	assert.Equal(t, []int{1, 2}, *attempts, "clusterAttempts attempts, then the error")
	assert.True(t, errors.Is(err, errClusterForming), "%v", err)
	assert.Equal(t, 2*clusterSize, strings.Count(err.Error(), "redistest: log tail of "),
		"every node's log, of both attempts")
}
