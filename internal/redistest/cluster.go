package redistest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	clusterSize    = 6 // 3 masters + 3 replicas
	clusterMasters = 3
	clusterSlots   = 16384
)

// ErrNoSlotOwner is returned when no running master serves the slot.
var ErrNoSlotOwner = errors.New("redistest: no running master serves the slot")

// Cluster is a six-node Redis Cluster (three masters with one replica each)
// created with redis-cli --cluster create. Which node is master of which slots
// changes with failovers; Masters and NodeForSlot ask the cluster.
//
// Methods are safe for concurrent use.
type Cluster struct {
	opts  options
	root  string
	nodes []*Server
	tlsm  *tlsMaterial
}

// StartCluster starts a cluster for the test, waits until it is healthy (see
// WaitHealthy) and registers its Close with t.Cleanup. It calls t.Fatal when
// it cannot (with an install hint when redis-server or redis-cli is missing).
// It blocks for at most about 6× the start bound (see RunCluster).
func StartCluster(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	c, err := RunCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range c.nodes {
				t.Logf("redistest: log tail of %s:\n%s", s.Addr(), s.LogTail())
			}
		}
		if err := c.Close(); err != nil {
			t.Errorf("redistest: closing cluster: %v", err)
		}
	})
	return c
}

// RunCluster starts a cluster for callers without a testing.TB and waits
// until it is healthy; the caller must call Close. It blocks for at most about
// 6× the start bound (two attempts: see clusterAttempts).
func RunCluster(opts ...Option) (*Cluster, error) {
	o := newOptions(opts)
	o.port = 0
	var errs []error
	for attempt := 1; ; attempt++ {
		c, err := tryCluster(o, clusterFormBound(attempt))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if !errors.Is(err, errClusterForming) || attempt == clusterAttempts {
			return nil, errors.Join(errs...)
		}
		fmt.Fprintf(os.Stderr, "redistest: a cluster did not form (attempt %d of %d), starting another: %v\n",
			attempt, clusterAttempts, firstLine(err))
	}
}

// clusterAttempts is how many clusters RunCluster starts before it gives up on one that does not form. Rarely, on
// a loaded machine, redis-cli --cluster create has waited for the nodes to join until its bound ran out, where
// the same start on new ports forms in a few seconds. The cause is in the nodes' logs, which the error of such an
// attempt carries.
const clusterAttempts = 2

// clusterFormBound is how long attempt n (from 1) of RunCluster may take to start the nodes and form the
// cluster; tests replace it to exercise the retry.
var clusterFormBound = func(int) time.Duration { return topologyTimeoutFactor * StartTimeout }

// errClusterForming marks a cluster whose nodes started but which did not become healthy in time: worth
// another attempt, unlike a missing binary.
var errClusterForming = errors.New("redistest: the cluster did not form")

// tryCluster starts one cluster in a directory of its own and waits until it is healthy; on failure it has
// closed the cluster and removed its directory.
func tryCluster(o options, bound time.Duration) (*Cluster, error) {
	root, tlsm, err := topologyRoot("redistest-cluster-*", o)
	if err != nil {
		return nil, err
	}
	c := &Cluster{opts: o, root: root, tlsm: tlsm}
	if err := c.start(bound); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(bound time.Duration) error {
	if _, err := serverBinary(); err != nil {
		return err
	}
	cli, err := cliBinary()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for i := range clusterSize {
		dir, err := memberDir(c.root, "node-"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		c.nodes = append(c.nodes, newServer(c.opts, modeCluster, dir, false, c.tlsm, nil))
	}
	if err := startAll(c.nodes); err != nil {
		return err
	}
	args := append(c.cliArgs(), "--cluster", "create")
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.SysProcAttr = sysProcAttr()
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: redis-cli --cluster create: %w\n%s%s", errClusterForming, err, out, c.logTails())
	}
	if err := c.WaitHealthy(ctx); err != nil {
		return fmt.Errorf("%w: %w%s", errClusterForming, err, c.logTails())
	}
	return nil
}

// logTails returns the end of every node's log, for the error of a cluster that did not form.
func (c *Cluster) logTails() string {
	var b strings.Builder
	for _, s := range c.nodes {
		fmt.Fprintf(&b, "\nredistest: log tail of %s:\n%s", s.Addr(), s.LogTail())
	}
	return b.String()
}

// firstLine returns the first line of err's message.
func firstLine(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		return msg[:i]
	}
	return msg
}

// cliArgs returns redis-cli's connection options (auth, TLS).
func (c *Cluster) cliArgs() []string {
	var args []string
	switch {
	case c.opts.password != "":
		args = append(args, "-a", c.opts.password, "--no-auth-warning")
	case len(c.opts.users) > 0:
		args = append(args, "--user", c.opts.users[0].name, "--pass", c.opts.users[0].pass, "--no-auth-warning")
	}
	if c.tlsm != nil {
		args = append(args, "--tls", "--cacert", c.tlsm.caFile, "--cert", c.tlsm.certFile, "--key", c.tlsm.keyFile)
	}
	return args
}

// Nodes returns the six nodes in start order (a copy); roles are assigned by
// redis-cli and change with failovers: use Masters and Replicas.
func (c *Cluster) Nodes() []*Server { return append([]*Server(nil), c.nodes...) }

// Addrs returns the nodes' "127.0.0.1:PORT" addresses, usable as seeds.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, s := range c.nodes {
		out[i] = s.Addr()
	}
	return out
}

// TLSConfig returns a client *tls.Config trusting the cluster's CA (nil
// without WithTLS).
func (c *Cluster) TLSConfig() *tls.Config {
	if c.tlsm == nil {
		return nil
	}
	return c.tlsm.client.Clone()
}

// view returns CLUSTER NODES as seen by the first running node that answers.
func (c *Cluster) view(ctx context.Context) ([]clusterNode, error) {
	var last error = errors.New("redistest: no cluster node is running")
	for _, s := range running(c.nodes) {
		text, err := s.DoString(ctx, "CLUSTER", "NODES")
		if err != nil {
			last = err
			continue
		}
		return parseClusterNodes(text)
	}
	return nil, last
}

// Masters returns the running masters that serve slots, ordered by their
// first slot. It blocks for a round trip, bounded by ctx.
func (c *Cluster) Masters(ctx context.Context) ([]*Server, error) {
	view, err := c.view(ctx)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(view, func(a, b clusterNode) int { return firstSlot(a) - firstSlot(b) })
	var out []*Server
	for _, n := range view {
		if s := byPort(c.nodes, n.port); n.master && !n.failed && n.slotCount() > 0 && s != nil && s.Running() {
			out = append(out, s)
		}
	}
	return out, nil
}

func firstSlot(n clusterNode) int {
	if len(n.slots) == 0 {
		return clusterSlots
	}
	return n.slots[0][0]
}

// Replicas returns the running nodes that the cluster lists as replicas.
// It blocks for a round trip, bounded by ctx.
func (c *Cluster) Replicas(ctx context.Context) ([]*Server, error) {
	view, err := c.view(ctx)
	if err != nil {
		return nil, err
	}
	var out []*Server
	for _, n := range view {
		if s := byPort(c.nodes, n.port); !n.master && s != nil && s.Running() {
			out = append(out, s)
		}
	}
	return out, nil
}

// NodeForSlot returns the running master serving slot (0..16383), as the
// first running node answering CLUSTER NODES sees it.
func (c *Cluster) NodeForSlot(ctx context.Context, slot int) (*Server, error) {
	if slot < 0 || slot >= clusterSlots {
		return nil, fmt.Errorf("redistest: slot %d out of range 0..%d", slot, clusterSlots-1)
	}
	view, err := c.view(ctx)
	if err != nil {
		return nil, err
	}
	for _, n := range view {
		if n.master && !n.failed && n.owns(slot) {
			if s := byPort(c.nodes, n.port); s != nil && s.Running() {
				return s, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: %d", ErrNoSlotOwner, slot)
}

// KeySlot asks the cluster for the key's hash slot (CLUSTER KEYSLOT), so
// tests can check a client's own CRC16 against the server.
func (c *Cluster) KeySlot(ctx context.Context, key string) (int, error) {
	var last error = errors.New("redistest: no cluster node is running")
	for _, s := range running(c.nodes) {
		n, err := s.DoInt(ctx, "CLUSTER", "KEYSLOT", key)
		if err != nil {
			last = err
			continue
		}
		return int(n), nil
	}
	return 0, last
}

// NodeForKey returns the running master serving the key's slot.
func (c *Cluster) NodeForKey(ctx context.Context, key string) (*Server, error) {
	slot, err := c.KeySlot(ctx, key)
	if err != nil {
		return nil, err
	}
	return c.NodeForSlot(ctx, slot)
}

// WaitHealthy waits until every running node reports cluster_state:ok with
// all 16384 slots assigned and ok, knows all six nodes, and lists the same
// masters, replicas and slot ranges as every other running node; and every
// running replica's link to its master is up. It blocks until then or until
// ctx ends.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	return waitUntil(ctx, "a healthy cluster", c.healthy)
}

func (c *Cluster) healthy(ctx context.Context) error {
	nodes := running(c.nodes)
	if len(nodes) == 0 {
		return errors.New("no cluster node is running")
	}
	var key string
	for _, s := range nodes {
		text, err := s.DoString(ctx, "CLUSTER", "INFO")
		if err != nil {
			return fmt.Errorf("node %s: %w", s.Addr(), err)
		}
		info := parseInfo(text)
		if info["cluster_state"] != "ok" || info["cluster_slots_assigned"] != itoa(clusterSlots) ||
			info["cluster_slots_ok"] != itoa(clusterSlots) || info["cluster_known_nodes"] != itoa(clusterSize) {
			return fmt.Errorf("node %s: state=%s assigned=%s ok=%s known=%s", s.Addr(), info["cluster_state"],
				info["cluster_slots_assigned"], info["cluster_slots_ok"], info["cluster_known_nodes"])
		}
		text, err = s.DoString(ctx, "CLUSTER", "NODES")
		if err != nil {
			return fmt.Errorf("node %s: %w", s.Addr(), err)
		}
		view, err := parseClusterNodes(text)
		if err != nil {
			return err
		}
		masters := 0
		for _, n := range view {
			if n.master && n.slotCount() > 0 {
				masters++
			}
		}
		if masters != clusterMasters {
			return fmt.Errorf("node %s sees %d masters with slots, want %d", s.Addr(), masters, clusterMasters)
		}
		k := topologyKey(view)
		if key != "" && k != key {
			return fmt.Errorf("nodes disagree on the topology:\n%s\nvs\n%s", key, k)
		}
		key = k
		me := slices.IndexFunc(view, func(n clusterNode) bool { return n.myself })
		if me >= 0 && !view[me].master {
			ri, err := s.Info(ctx, "replication")
			if err != nil {
				return fmt.Errorf("node %s: %w", s.Addr(), err)
			}
			if ri["master_link_status"] != "up" {
				return fmt.Errorf("replica %s: master link %s", s.Addr(), ri["master_link_status"])
			}
		}
	}
	return nil
}

// KillMaster crashes (SIGKILL) the master serving slot and waits until its
// replica has taken over: every running node names another master for the
// slot and reports cluster_state:ok. It returns the killed node (Restart it:
// it rejoins as a replica) and the new master. A failover takes about the
// cluster-node-timeout (2 s by default) plus about a second. It blocks until
// then or until ctx ends.
func (c *Cluster) KillMaster(ctx context.Context, slot int) (old, promoted *Server, err error) {
	old, err = c.NodeForSlot(ctx, slot)
	if err != nil {
		return nil, nil, err
	}
	if err := old.Kill(); err != nil {
		return nil, nil, err
	}
	err = waitUntil(ctx, "a cluster failover away from "+old.Addr(), func(ctx context.Context) error {
		promoted = nil
		for _, s := range running(c.nodes) {
			text, err := s.DoString(ctx, "CLUSTER", "INFO")
			if err != nil {
				return err
			}
			if st := parseInfo(text)["cluster_state"]; st != "ok" {
				return fmt.Errorf("node %s: cluster_state %s", s.Addr(), st)
			}
			text, err = s.DoString(ctx, "CLUSTER", "NODES")
			if err != nil {
				return err
			}
			view, err := parseClusterNodes(text)
			if err != nil {
				return err
			}
			i := slices.IndexFunc(view, func(n clusterNode) bool { return n.master && !n.failed && n.owns(slot) })
			if i < 0 || view[i].port == old.Port() {
				return fmt.Errorf("node %s: slot %d not yet served by a new master", s.Addr(), slot)
			}
			n := byPort(c.nodes, view[i].port)
			if n == nil || (promoted != nil && n != promoted) {
				return errors.New("nodes disagree on the new master")
			}
			promoted = n
		}
		return nil
	})
	return old, promoted, err
}

// Close stops all nodes concurrently and removes the cluster's directory. It
// blocks for at most about the stop bound; a second Close returns nil.
func (c *Cluster) Close() error {
	err := closeAll(c.nodes)
	if c.root != "" {
		err = errors.Join(err, os.RemoveAll(c.root))
	}
	return err
}
