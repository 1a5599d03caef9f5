package redistest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Sizes of a replica set.
const (
	replicaSetReplicas  = 2
	replicaSetSentinels = 3
	sentinelQuorum      = 2
	// sentinelFailoverTimeout is Sentinel's failover-timeout: short, so that a
	// failover attempt lost to a split vote is retried after 2×3 s rather than
	// the default 2×3 min.
	sentinelFailoverTimeout = 3 * time.Second
)

// ErrNoMaster is returned when the Sentinels do not agree on a running master.
var ErrNoMaster = errors.New("redistest: the Sentinels report no running master")

// ReplicaSet is a master, two replicas and three Sentinels (quorum 2)
// monitoring the master under MasterName. Which data node is the master
// changes with failovers; Master asks the Sentinels.
//
// Methods are safe for concurrent use.
type ReplicaSet struct {
	opts      options
	root      string
	nodes     []*Server // data nodes; nodes[0] started as the master
	sentinels []*Server
	tlsm      *tlsMaterial
}

// StartReplicaSet starts a replica set for the test, waits until it is
// healthy (see WaitHealthy) and registers its Close with t.Cleanup. It calls
// t.Fatal when it cannot. It blocks for at most about 3× the start bound.
func StartReplicaSet(t testing.TB, opts ...Option) *ReplicaSet {
	t.Helper()
	rs, err := RunReplicaSet(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range rs.all() {
				t.Logf("redistest: log tail of %s:\n%s", s.Addr(), s.LogTail())
			}
		}
		if err := rs.Close(); err != nil {
			t.Errorf("redistest: closing replica set: %v", err)
		}
	})
	return rs
}

// RunReplicaSet starts a replica set for callers without a testing.TB and
// waits until it is healthy; the caller must call Close. It blocks for at
// most about 3× the start bound.
func RunReplicaSet(opts ...Option) (*ReplicaSet, error) {
	o := newOptions(opts)
	o.port = 0
	root, tlsm, err := topologyRoot("redistest-rs-*", o)
	if err != nil {
		return nil, err
	}
	rs := &ReplicaSet{opts: o, root: root, tlsm: tlsm}
	if err := rs.start(); err != nil {
		_ = rs.Close()
		return nil, err
	}
	return rs, nil
}

func (rs *ReplicaSet) start() error {
	if _, err := serverBinary(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), topologyTimeoutFactor*StartTimeout)
	defer cancel()

	dir, err := memberDir(rs.root, "master")
	if err != nil {
		return err
	}
	master := newServer(rs.opts, modeStandalone, dir, false, rs.tlsm, nil)
	rs.nodes = append(rs.nodes, master)
	if err := master.firstStart(); err != nil {
		return err
	}

	var replicas []*Server
	for i := range replicaSetReplicas {
		dir, err := memberDir(rs.root, "replica-"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		s := newServer(rs.opts, modeStandalone, dir, false, rs.tlsm,
			[]string{"replicaof 127.0.0.1 " + itoa(master.Port())})
		rs.nodes = append(rs.nodes, s)
		replicas = append(replicas, s)
	}
	if err := startAll(replicas); err != nil {
		return err
	}
	// Sentinels learn the replicas from the master's INFO, which they read at
	// connect and then every 10 s: start them once the replicas are attached,
	// or they only see them 10 s later.
	if err := waitUntil(ctx, "replicas in sync", func(ctx context.Context) error {
		info, err := master.Info(ctx, "replication")
		if err != nil {
			return err
		}
		if info["connected_slaves"] != itoa(replicaSetReplicas) {
			return fmt.Errorf("master has %s replicas", info["connected_slaves"])
		}
		for i := range replicaSetReplicas {
			if st := info["slave"+itoa(i)]; !strings.Contains(st, "state=online") {
				return fmt.Errorf("replica %d: %s", i, st)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	for i := range replicaSetSentinels {
		dir, err := memberDir(rs.root, "sentinel-"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		s := newServer(rs.opts, modeSentinel, dir, false, rs.tlsm, rs.sentinelConfig(master.Port()))
		rs.sentinels = append(rs.sentinels, s)
	}
	if err := startAll(rs.sentinels); err != nil {
		return err
	}
	return rs.WaitHealthy(ctx)
}

func (rs *ReplicaSet) sentinelConfig(masterPort int) []string {
	name := MasterName
	lines := []string{
		"sentinel resolve-hostnames no",
		"sentinel monitor " + name + " 127.0.0.1 " + itoa(masterPort) + " " + itoa(sentinelQuorum),
		"sentinel down-after-milliseconds " + name + " " + itoa(int(SentinelDownAfter/time.Millisecond)),
		"sentinel failover-timeout " + name + " " + itoa(int(sentinelFailoverTimeout/time.Millisecond)),
		"sentinel parallel-syncs " + name + " " + itoa(replicaSetReplicas),
	}
	switch {
	case rs.opts.password != "":
		lines = append(lines, "sentinel auth-pass "+name+" "+quote(rs.opts.password))
	case len(rs.opts.users) > 0:
		u := rs.opts.users[0]
		lines = append(lines, "sentinel auth-user "+name+" "+u.name, "sentinel auth-pass "+name+" "+quote(u.pass))
	}
	return lines
}

// MasterName returns the name under which the Sentinels monitor the master.
func (rs *ReplicaSet) MasterName() string { return MasterName }

// Nodes returns the three data nodes in start order (Nodes()[0] started as the
// master). The slice is a copy.
func (rs *ReplicaSet) Nodes() []*Server { return append([]*Server(nil), rs.nodes...) }

// Sentinels returns the three Sentinels. The slice is a copy.
func (rs *ReplicaSet) Sentinels() []*Server { return append([]*Server(nil), rs.sentinels...) }

// SentinelAddrs returns the Sentinels' "127.0.0.1:PORT" addresses.
func (rs *ReplicaSet) SentinelAddrs() []string {
	out := make([]string, len(rs.sentinels))
	for i, s := range rs.sentinels {
		out[i] = s.Addr()
	}
	return out
}

// TLSConfig returns a client *tls.Config trusting the set's CA (nil without
// WithTLS); it works for the data nodes and the Sentinels.
func (rs *ReplicaSet) TLSConfig() *tls.Config {
	if rs.tlsm == nil {
		return nil
	}
	return rs.tlsm.client.Clone()
}

func (rs *ReplicaSet) all() []*Server {
	return append(append([]*Server(nil), rs.nodes...), rs.sentinels...)
}

// Master asks the running Sentinels for the master's address (the first that
// answers) and returns that data node. It blocks for one round trip per
// Sentinel tried, bounded by ctx.
func (rs *ReplicaSet) Master(ctx context.Context) (*Server, error) {
	var last error = ErrNoMaster
	for _, s := range running(rs.sentinels) {
		port, err := rs.masterPortFrom(ctx, s)
		if err != nil {
			last = err
			continue
		}
		if n := byPort(rs.nodes, port); n != nil {
			return n, nil
		}
		last = fmt.Errorf("%w: sentinel %s names port %d, not one of ours", ErrNoMaster, s.Addr(), port)
	}
	return nil, last
}

// Replicas returns the data nodes other than the current master (running or
// not).
func (rs *ReplicaSet) Replicas(ctx context.Context) ([]*Server, error) {
	m, err := rs.Master(ctx)
	if err != nil {
		return nil, err
	}
	var out []*Server
	for _, n := range rs.nodes {
		if n != m {
			out = append(out, n)
		}
	}
	return out, nil
}

func (rs *ReplicaSet) masterPortFrom(ctx context.Context, sentinel *Server) (int, error) {
	addr, err := sentinel.DoStrings(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MasterName)
	if err != nil {
		return 0, err
	}
	if len(addr) != 2 {
		return 0, fmt.Errorf("%w: sentinel %s answered %v", ErrNoMaster, sentinel.Addr(), addr)
	}
	return strconv.Atoi(addr[1])
}

// WaitHealthy waits until every running Sentinel names the same running data
// node as master, sees it as healthy (no s_down/o_down, no failover in
// progress) and sees the other running Sentinels, and every other running data
// node replicates from that master with its link up. It blocks until then or
// until ctx ends.
func (rs *ReplicaSet) WaitHealthy(ctx context.Context) error {
	return waitUntil(ctx, "a healthy replica set", rs.healthy)
}

func (rs *ReplicaSet) healthy(ctx context.Context) error {
	sentinels := running(rs.sentinels)
	if len(sentinels) == 0 {
		return errors.New("no Sentinel is running")
	}
	masterPort := 0
	for _, s := range sentinels {
		m, err := s.DoMap(ctx, "SENTINEL", "MASTER", MasterName)
		if err != nil {
			return fmt.Errorf("sentinel %s: %w", s.Addr(), err)
		}
		if m["flags"] != "master" {
			return fmt.Errorf("sentinel %s: master flags %q", s.Addr(), m["flags"])
		}
		// A Sentinel remembers stopped peers, hence at least, not exactly.
		if got, _ := strconv.Atoi(m["num-other-sentinels"]); got < len(sentinels)-1 {
			return fmt.Errorf("sentinel %s: sees %d other sentinels, want %d", s.Addr(), got, len(sentinels)-1)
		}
		port, _ := strconv.Atoi(m["port"])
		if masterPort != 0 && port != masterPort {
			return fmt.Errorf("sentinels disagree on the master: ports %d and %d", masterPort, port)
		}
		masterPort = port
	}
	master := byPort(rs.nodes, masterPort)
	if master == nil || !master.Running() {
		return fmt.Errorf("%w (port %d)", ErrNoMaster, masterPort)
	}
	info, err := master.Info(ctx, "replication")
	if err != nil {
		return fmt.Errorf("master %s: %w", master.Addr(), err)
	}
	if info["role"] != "master" {
		return fmt.Errorf("master %s reports role %s", master.Addr(), info["role"])
	}
	replicas := 0
	for _, n := range running(rs.nodes) {
		if n == master {
			continue
		}
		replicas++
		ri, err := n.Info(ctx, "replication")
		if err != nil {
			return fmt.Errorf("replica %s: %w", n.Addr(), err)
		}
		if ri["role"] != "slave" || ri["master_port"] != itoa(masterPort) || ri["master_link_status"] != "up" {
			return fmt.Errorf("replica %s: role=%s master_port=%s link=%s", n.Addr(), ri["role"], ri["master_port"], ri["master_link_status"])
		}
	}
	if info["connected_slaves"] != itoa(replicas) {
		return fmt.Errorf("master %s has %s connected replicas, want %d", master.Addr(), info["connected_slaves"], replicas)
	}
	// A Sentinel can promote a replica only once it has INFO from it
	// (otherwise SENTINEL FAILOVER answers NOGOODSLAVE).
	for _, s := range sentinels {
		if err := rs.sentinelSeesReplicas(ctx, s, master); err != nil {
			return err
		}
	}
	return nil
}

// sentinelSeesReplicas checks that the Sentinel knows every running replica
// and could promote it.
func (rs *ReplicaSet) sentinelSeesReplicas(ctx context.Context, s, master *Server) error {
	r, err := s.Do(ctx, "SENTINEL", "REPLICAS", MasterName)
	if err != nil {
		return fmt.Errorf("sentinel %s: %w", s.Addr(), err)
	}
	seen := map[string]map[string]string{}
	for _, e := range r.Array {
		fields, err := e.Strings()
		if err != nil || len(fields)%2 != 0 {
			return fmt.Errorf("sentinel %s: SENTINEL REPLICAS entry %s", s.Addr(), e)
		}
		m := map[string]string{}
		for i := 0; i < len(fields); i += 2 {
			m[fields[i]] = fields[i+1]
		}
		seen[m["port"]] = m
	}
	for _, n := range running(rs.nodes) {
		if n == master {
			continue
		}
		m, ok := seen[itoa(n.Port())]
		if !ok {
			return fmt.Errorf("sentinel %s does not know replica %s yet", s.Addr(), n.Addr())
		}
		// info-refresh is the age in ms of the Sentinel's last INFO from the
		// replica, 0 before the first one; Sentinel promotes only replicas
		// with INFO younger than 3 INFO periods (30 s). Its view of the
		// replica's link lags by up to one period (10 s) and is not awaited:
		// the replica's own INFO was checked above.
		refresh, err := strconv.Atoi(m["info-refresh"])
		if err != nil || m["flags"] != "slave" || refresh <= 0 || refresh >= 30000 {
			return fmt.Errorf("sentinel %s sees replica %s: flags=%s info-refresh=%s",
				s.Addr(), n.Addr(), m["flags"], m["info-refresh"])
		}
	}
	return nil
}

// KillMaster crashes the current master with SIGKILL and waits until the
// Sentinels have promoted a replica and it reports role master. It returns the
// killed node (restart it with Restart: the Sentinels turn it into a replica)
// and the new master. It blocks until then or until ctx ends; a failover takes
// about down-after (2 s by default) plus 1–2 s of election.
func (rs *ReplicaSet) KillMaster(ctx context.Context) (old, promoted *Server, err error) {
	old, err = rs.Master(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := old.Kill(); err != nil {
		return nil, nil, err
	}
	promoted, err = rs.waitNewMaster(ctx, old)
	return old, promoted, err
}

// Rejoin restarts a stopped or killed data node as a replica of the current
// master and waits until the set is healthy again. (A plain Restart of a
// killed master also works, but the node then comes back as a master, which
// is a realistic split-brain window, and the Sentinels only turn it into a
// replica 10-16 s later: their fixed 8 s settle time plus INFO polling,
// measured here at 15.7 s.) It blocks until healthy or until ctx ends.
func (rs *ReplicaSet) Rejoin(ctx context.Context, node *Server) error {
	if node.Running() {
		return fmt.Errorf("redistest: Rejoin of %s: it is running; Kill or Stop it first", node.Addr())
	}
	m, err := rs.Master(ctx)
	if err != nil {
		return err
	}
	if m == node {
		return fmt.Errorf("redistest: Rejoin of %s: the Sentinels still name it master; wait for the failover first", node.Addr())
	}
	if err := node.appendConfig("replicaof 127.0.0.1 " + itoa(m.Port())); err != nil {
		return err
	}
	if err := node.Restart(); err != nil {
		return err
	}
	return rs.WaitHealthy(ctx)
}

// Failover asks a Sentinel for a graceful failover (SENTINEL FAILOVER) and
// waits until another node is master. It blocks until then or until ctx ends.
func (rs *ReplicaSet) Failover(ctx context.Context) (old, promoted *Server, err error) {
	old, err = rs.Master(ctx)
	if err != nil {
		return nil, nil, err
	}
	sentinels := running(rs.sentinels)
	if len(sentinels) == 0 {
		return nil, nil, errors.New("redistest: no Sentinel is running")
	}
	if _, err := sentinels[0].Do(ctx, "SENTINEL", "FAILOVER", MasterName); err != nil {
		return nil, nil, err
	}
	promoted, err = rs.waitNewMaster(ctx, old)
	return old, promoted, err
}

// waitNewMaster waits until every running Sentinel names the same node, other
// than old, and that node reports role master.
func (rs *ReplicaSet) waitNewMaster(ctx context.Context, old *Server) (*Server, error) {
	var promoted *Server
	err := waitUntil(ctx, "a failover away from "+old.Addr(), func(ctx context.Context) error {
		promoted = nil
		for _, s := range running(rs.sentinels) {
			port, err := rs.masterPortFrom(ctx, s)
			if err != nil {
				return err
			}
			if port == old.Port() {
				return fmt.Errorf("sentinel %s still names %s", s.Addr(), old.Addr())
			}
			n := byPort(rs.nodes, port)
			if n == nil || (promoted != nil && n != promoted) {
				return fmt.Errorf("sentinels disagree on the new master")
			}
			promoted = n
		}
		if promoted == nil {
			return errors.New("no Sentinel is running")
		}
		role, err := promoted.Info(ctx, "replication")
		if err != nil {
			return err
		}
		if role["role"] != "master" {
			return fmt.Errorf("%s named master but reports role %s", promoted.Addr(), role["role"])
		}
		return nil
	})
	return promoted, err
}

// Close stops the Sentinels first (so none starts a failover while the data
// nodes go down), then the data nodes, and removes the set's directory. It
// blocks for at most about twice the stop bound; a second Close returns nil.
func (rs *ReplicaSet) Close() error {
	err := closeAll(rs.sentinels)
	err = errors.Join(err, closeAll(rs.nodes))
	if rs.root != "" {
		err = errors.Join(err, os.RemoveAll(rs.root))
	}
	return err
}
