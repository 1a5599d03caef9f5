package integration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// Deployments: the same tests run against one server, a Sentinel-managed master with two replicas, and a
// six-node Redis Cluster. A test asks startServer for its server and gets one of the shapes below through the
// server interface; the topology suites (topology_suites_test.go) choose which.

// server is what a test needs of the deployment it runs on: the admin commands of redistest.Server (for set-up
// and assertions), routed to the right node, and what a client connects to. *redistest.Server is the standalone
// shape; *deployment the others.
type server interface {
	Addr() string
	URL() string
	Do(ctx context.Context, args ...string) (redistest.Reply, error)
	DoInt(ctx context.Context, args ...string) (int64, error)
	DoStrings(ctx context.Context, args ...string) ([]string, error)
	DoMap(ctx context.Context, args ...string) (map[string]string, error)
	Info(ctx context.Context, section ...string) (map[string]string, error)
}

// Topology names, as the suites and LOCKSMITH_TOPOLOGIES spell them. The "-sync" forms are the same deployments
// with every acquire waiting for replicas (rlock.Config.SyncReplicas).
const (
	topoStandalone   = "standalone"
	topoSentinel     = "sentinel"
	topoSentinelSync = "sentinel-sync"
	topoCluster      = "cluster"
	topoClusterSync  = "cluster-sync"
)

// shared is the deployment the running topology suite gives every test it runs (nil: each test starts its own
// standalone server). Set and cleared by runSuite around its subtests, which run one at a time.
var shared *deployment

// startServer returns the server a portable test runs on: the suite's shared deployment, emptied for the test, or
// a standalone server of its own.
func startServer(t testing.TB) server {
	t.Helper()
	if shared != nil {
		shared.reset(t)
		return shared
	}
	return redistest.Start(t)
}

// lockConfig completes cfg for srv: the transport's address fields, and the replica sync of a "-sync" deployment.
// Other fields are cfg's.
func lockConfig(srv server, cfg rlock.Config) rlock.Config {
	d, ok := srv.(*deployment)
	if !ok {
		cfg.Conn.Addr = srv.Addr()
		return cfg
	}
	switch {
	case d.rs != nil:
		cfg.Conn.SentinelAddrs, cfg.Conn.MasterName = d.rs.SentinelAddrs(), d.rs.MasterName()
	default:
		cfg.Conn.ClusterAddrs = d.cl.Addrs()
	}
	if cfg.SyncReplicas == 0 {
		cfg.SyncReplicas = d.syncReplicas
	}
	return cfg
}

// deployment is a replica set behind Sentinel or a cluster, seen as one server: commands on a key go to the
// master serving it; commands about the whole keyspace (DBSIZE, FLUSHALL, PUBSUB CHANNELS) go to every master and
// their answers are combined; pub/sub questions include sharded channels (a cluster client subscribes with
// SSUBSCRIBE) and leave out Sentinel's own hello channel.
type deployment struct {
	name         string
	rs           *redistest.ReplicaSet // Sentinel
	cl           *redistest.Cluster    // cluster
	syncReplicas int                   // rlock.Config.SyncReplicas for its clients
}

// startDeployment starts the topology for the test (Close registered with t.Cleanup).
func startDeployment(t testing.TB, topo string, opts ...redistest.Option) *deployment {
	t.Helper()
	d := &deployment{name: topo}
	switch topo {
	case topoSentinel, topoSentinelSync:
		d.rs = redistest.StartReplicaSet(t, opts...)
		if topo == topoSentinelSync {
			d.syncReplicas = 2
		}
	case topoCluster, topoClusterSync:
		d.cl = redistest.StartCluster(t, opts...)
		if topo == topoClusterSync {
			d.syncReplicas = 1
		}
	default:
		t.Fatalf("unknown topology %q", topo)
	}
	return d
}

// masters returns the running masters.
func (d *deployment) masters(ctx context.Context) ([]*redistest.Server, error) {
	if d.rs != nil {
		m, err := d.rs.Master(ctx)
		if err != nil {
			return nil, err
		}
		return []*redistest.Server{m}, nil
	}
	return d.cl.Masters(ctx)
}

// nodeFor returns the master serving key.
func (d *deployment) nodeFor(ctx context.Context, key string) (*redistest.Server, error) {
	if d.rs != nil {
		return d.rs.Master(ctx)
	}
	return d.cl.NodeForSlot(ctx, conn.KeySlot(key))
}

// Addr is the address of a master (the Sentinel-managed one, or the first of the cluster's), for messages.
func (d *deployment) Addr() string {
	ms, err := d.masters(context.Background())
	if err != nil || len(ms) == 0 {
		return "(no master)"
	}
	return ms[0].Addr()
}

// URL is the deployment's redis-sentinel:// or redis-cluster:// URL (conn.ParseURL).
func (d *deployment) URL() string {
	if d.rs != nil {
		return "redis-sentinel://" + strings.Join(d.rs.SentinelAddrs(), ",") + "/" + d.rs.MasterName()
	}
	return "redis-cluster://" + strings.Join(d.cl.Addrs(), ",")
}

// reset empties the deployment for the next test: FLUSHALL on every master, and no client subscribed to anything
// (the previous test's clients are closed, but the servers notice closed connections asynchronously). It waits
// for the replicas too, so that a test reading a replica starts from the same state.
func (d *deployment) reset(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if d.cl != nil {
		if err := d.cl.WaitHealthy(ctx); err != nil {
			t.Fatalf("%s: %v", d.name, err)
		}
	} else if err := d.rs.WaitHealthy(ctx); err != nil {
		t.Fatalf("%s: %v", d.name, err)
	}
	ms, err := d.masters(ctx)
	if err != nil {
		t.Fatalf("%s: %v", d.name, err)
	}
	for _, m := range ms {
		if _, err := m.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatalf("%s: FLUSHALL on %s: %v", d.name, m.Addr(), err)
		}
		if _, err := m.Do(ctx, "WAIT", "1", "1000"); err != nil {
			t.Fatalf("%s: WAIT on %s: %v", d.name, m.Addr(), err)
		}
	}
	eventually(t, 10*time.Second, d.name+": no subscriptions left by earlier tests", func() bool {
		chans, err := d.DoStrings(ctx, "PUBSUB", "CHANNELS")
		return err == nil && len(chans) == 0
	})
}

// Do runs one command where the deployment keeps what it names (see deployment).
func (d *deployment) Do(ctx context.Context, args ...string) (redistest.Reply, error) {
	if len(args) == 0 {
		return redistest.Reply{}, fmt.Errorf("deployment: empty command")
	}
	cmd := strings.ToUpper(args[0])
	sub := ""
	if len(args) > 1 {
		sub = strings.ToUpper(args[1])
	}
	switch {
	case cmd == "PUBSUB" && sub == "CHANNELS":
		return d.channels(ctx, args[2:])
	case cmd == "PUBSUB" && sub == "NUMSUB":
		return d.numsub(ctx, args[2:])
	case cmd == "DBSIZE":
		return d.sum(ctx, args)
	case cmd == "FLUSHALL" || cmd == "FLUSHDB" || (cmd == "SCRIPT" && sub == "FLUSH"):
		return d.everyMaster(ctx, args)
	case cmd == "PUBLISH" && d.cl != nil && len(args) == 3:
		// A peer on a cluster publishes where a cluster client listens: sharded (Redisson does the same).
		return d.onKey(ctx, args[1], "SPUBLISH", args[1], args[2])
	case (cmd == "EVAL" || cmd == "EVALSHA") && len(args) > 3 && args[2] != "0":
		return d.onKey(ctx, args[3], args...)
	case len(args) > 1 && cmd != "INFO" && cmd != "PING" && cmd != "CONFIG" && cmd != "CLIENT":
		return d.onKey(ctx, args[1], args...)
	}
	ms, err := d.masters(ctx)
	if err != nil {
		return redistest.Reply{}, err
	}
	return ms[0].Do(ctx, args...)
}

func (d *deployment) onKey(ctx context.Context, key string, args ...string) (redistest.Reply, error) {
	n, err := d.nodeFor(ctx, key)
	if err != nil {
		return redistest.Reply{}, err
	}
	return n.Do(ctx, args...)
}

func (d *deployment) everyMaster(ctx context.Context, args []string) (redistest.Reply, error) {
	ms, err := d.masters(ctx)
	if err != nil {
		return redistest.Reply{}, err
	}
	var last redistest.Reply
	for _, m := range ms {
		if last, err = m.Do(ctx, args...); err != nil {
			return last, err
		}
	}
	return last, nil
}

func (d *deployment) sum(ctx context.Context, args []string) (redistest.Reply, error) {
	ms, err := d.masters(ctx)
	if err != nil {
		return redistest.Reply{}, err
	}
	total := redistest.Reply{Kind: redistest.KindInt}
	for _, m := range ms {
		n, err := m.DoInt(ctx, args...)
		if err != nil {
			return redistest.Reply{}, err
		}
		total.Int += n
	}
	return total, nil
}

// channels answers PUBSUB CHANNELS [pattern] for the whole deployment: plain and sharded channels of every master,
// without Sentinel's hello channel.
func (d *deployment) channels(ctx context.Context, pattern []string) (redistest.Reply, error) {
	ms, err := d.masters(ctx)
	if err != nil {
		return redistest.Reply{}, err
	}
	var all []string
	for _, m := range ms {
		for _, sub := range []string{"CHANNELS", "SHARDCHANNELS"} {
			chans, err := m.DoStrings(ctx, append([]string{"PUBSUB", sub}, pattern...)...)
			if err != nil {
				return redistest.Reply{}, err
			}
			for _, ch := range chans {
				if !strings.HasPrefix(ch, "__sentinel__:") && !slices.Contains(all, ch) {
					all = append(all, ch)
				}
			}
		}
	}
	r := redistest.Reply{Kind: redistest.KindArray}
	for _, ch := range all {
		r.Array = append(r.Array, redistest.Reply{Kind: redistest.KindBulk, Str: ch})
	}
	return r, nil
}

// numsub answers PUBSUB NUMSUB channel...: plain and sharded subscribers on the master of each channel's slot.
func (d *deployment) numsub(ctx context.Context, channels []string) (redistest.Reply, error) {
	r := redistest.Reply{Kind: redistest.KindArray}
	for _, ch := range channels {
		n, err := d.nodeFor(ctx, ch)
		if err != nil {
			return redistest.Reply{}, err
		}
		var count int64
		for _, sub := range []string{"NUMSUB", "SHARDNUMSUB"} {
			v, err := n.Do(ctx, "PUBSUB", sub, ch)
			if err != nil {
				return redistest.Reply{}, err
			}
			if len(v.Array) == 2 {
				count += v.Array[1].Int
			}
		}
		r.Array = append(r.Array, redistest.Reply{Kind: redistest.KindBulk, Str: ch},
			redistest.Reply{Kind: redistest.KindInt, Int: count})
	}
	return r, nil
}

// DoInt runs Do and returns an integer reply (or a bulk string holding one); a nil reply is redistest.ErrNil.
func (d *deployment) DoInt(ctx context.Context, args ...string) (int64, error) {
	r, err := d.Do(ctx, args...)
	if err != nil {
		return 0, err
	}
	switch r.Kind {
	case redistest.KindInt:
		return r.Int, nil
	case redistest.KindBulk, redistest.KindStatus:
		return strconv.ParseInt(r.Str, 10, 64)
	case redistest.KindNil:
		return 0, redistest.ErrNil
	}
	return 0, fmt.Errorf("%w: want integer, got %s", redistest.ErrUnexpectedReply, r)
}

// DoStrings runs Do and returns an array reply as strings.
func (d *deployment) DoStrings(ctx context.Context, args ...string) ([]string, error) {
	r, err := d.Do(ctx, args...)
	if err != nil {
		return nil, err
	}
	return r.Strings()
}

// DoMap runs Do and returns a flat field/value array reply as a map.
func (d *deployment) DoMap(ctx context.Context, args ...string) (map[string]string, error) {
	list, err := d.DoStrings(ctx, args...)
	if err != nil {
		return nil, err
	}
	if len(list)%2 != 0 {
		return nil, fmt.Errorf("%w: odd number of elements (%d) for a map", redistest.ErrUnexpectedReply, len(list))
	}
	m := make(map[string]string, len(list)/2)
	for i := 0; i < len(list); i += 2 {
		m[list[i]] = list[i+1]
	}
	return m, nil
}

// Info runs INFO on the first master. (Tests that count commands use commandCounts, which counts on every master.)
func (d *deployment) Info(ctx context.Context, section ...string) (map[string]string, error) {
	ms, err := d.masters(ctx)
	if err != nil {
		return nil, err
	}
	return ms[0].Info(ctx, section...)
}

var _ server = (*deployment)(nil)
var _ server = (*redistest.Server)(nil)
