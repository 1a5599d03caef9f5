package conn

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/timer"
)

// Defaults, applied by New to every zero field of Config (see Config for what each means). The figures behind the
// performance-related ones are in doc.go.
const (
	// DefaultAddr is the server dialled when Config.Addr is empty.
	DefaultAddr = "127.0.0.1:6379"
	// DefaultPoolSize is the number of event-loop connections per server for commands. 1 to 4 measured within
	// noise of each other (pairs/s per server core, client CPU per pair) at 64 and 1024 goroutines on the 2-core
	// machines here; two halve the head-of-line blocking behind one slow reply, which least-pending then avoids.
	DefaultPoolSize = 2
	// DefaultDialTimeout bounds one connection attempt: TCP connect, TLS handshake and the AUTH/SELECT/SETNAME
	// exchange.
	DefaultDialTimeout = 5 * time.Second
	// DefaultResponseTimeout is how long a connection may go without a reply while commands are waiting before it
	// is reset: a few seconds, so that a dead peer is noticed well within a lock's lease while a busy server's
	// slow reply is still waited for.
	DefaultResponseTimeout = 3 * time.Second
	// DefaultPingInterval is how long a connection may stay idle before a PING checks that the peer is alive.
	DefaultPingInterval = 10 * time.Second
	// DefaultReconnectMinBackoff is the delay before the second attempt to re-establish a dropped connection (the
	// first is immediate); it doubles on each failure up to DefaultReconnectMaxBackoff, with jitter.
	DefaultReconnectMinBackoff = 50 * time.Millisecond
	// DefaultReconnectMaxBackoff caps the delay between connection attempts.
	DefaultReconnectMaxBackoff = 2 * time.Second
	// DefaultTopologyRefreshInterval is how often a cluster Client re-reads the slot map (CLUSTER SHARDS or CLUSTER
	// SLOTS) and a Sentinel Client asks the Sentinels for the master, besides the refreshes that errors, MOVED
	// replies and +switch-master messages trigger at once.
	DefaultTopologyRefreshInterval = 5 * time.Second
	// DefaultRetryTimeout bounds how long a Sentinel or cluster Client keeps re-sending a command that was not run:
	// refused with MOVED, ASK, TRYAGAIN, CLUSTERDOWN, LOADING or READONLY, or never sent because its node was
	// unreachable. It covers a failover with the defaults measured here (Sentinel down-after 2 s or
	// cluster-node-timeout 2 s, plus about a second of election); the caller's context bounds it too.
	DefaultRetryTimeout = 5 * time.Second
	// DefaultEventLoops is the number of gnet event loops of a Client: one loop (one OS thread) serves every
	// connection; two measured no better on the 2-core machines here (the loop used 0.2-0.5 of a core at the
	// server's limit) and cost a thread.
	DefaultEventLoops = 1
)

// FlushPolicy says when the commands appended to a connection's buffer are written to the socket.
type FlushPolicy int

const (
	// FlushEager (the default) writes as soon as possible. A caller that finds the connection idle (nothing in
	// flight) writes on the socket itself, with no event-loop hand-off; otherwise, if no flush is pending, it rings
	// the loop's doorbell, and everything appended until the loop runs leaves in that one write — unless a deep
	// pipeline (32 commands or more) awaits its replies on the connection: the server is busy with it, and the loop
	// turn that reads its replies carries the new command. Every loop turn that processed replies also ends with a
	// flush. This keeps the server's socket fed, which measured 1.3-1.7x the throughput of FlushOnReply at 64
	// goroutines (bench/README.md, "conn").
	FlushEager FlushPolicy = iota
	// FlushOnReply holds commands appended while earlier ones await replies until the loop turn that processes
	// those replies (or writes at once when the connection is idle). It never wakes the loop, so it makes the
	// fewest and largest writes, but the server idles for a round trip per batch per connection.
	FlushOnReply
)

// String names the policy as the URL option flush_policy spells it.
func (p FlushPolicy) String() string {
	switch p {
	case FlushEager:
		return "eager"
	case FlushOnReply:
		return "on_reply"
	}
	return "FlushPolicy(" + strconv.Itoa(int(p)) + ")"
}

// Config configures a Client. The zero value (plus Addr) is a working configuration: New applies the Default*
// constants to every zero field. ParseURL builds one from a URL (redis://, rediss://, redis-sentinel://,
// redis-cluster://...).
//
// The topology is chosen by which address field is set: Addr for one server (standalone), SentinelAddrs and
// MasterName for a master found through Sentinel, ClusterAddrs for a Redis Cluster. Setting more than one is an
// error. Every other field applies to every data node of the topology.
type Config struct {
	// Addr is the server's host:port. Default DefaultAddr (when no other topology is configured).
	Addr string

	// SentinelAddrs, when set, makes the Client find the master named MasterName through these Sentinels
	// (host:port each): SENTINEL GET-MASTER-ADDR-BY-NAME, then ROLE on every connection to the master, which must
	// say master. The Client follows +switch-master on every Sentinel and moves its connections and subscriptions
	// to the new master. See "Sentinel" in doc.go.
	SentinelAddrs []string
	// MasterName is the name the Sentinels monitor the master under. Required with SentinelAddrs.
	MasterName string
	// SentinelUsername and SentinelPassword authenticate the connections to the Sentinels (which may have their
	// own requirepass or ACL user); empty sends no AUTH to them. Username and Password are for the data nodes.
	SentinelUsername, SentinelPassword string

	// ClusterAddrs, when set, makes the Client a Redis Cluster client: it reads the slot map from the first of
	// these seed nodes (host:port each) that answers, keeps a node (a pool and a pub/sub connection) per master,
	// and routes each command by the hash slot of its first key. DB must be 0. See "Cluster" in doc.go.
	ClusterAddrs []string
	// DisableShardedPubSub makes a cluster Client use SUBSCRIBE and PUBLISH even when the servers have sharded
	// pub/sub (Redis 7: SSUBSCRIBE, SPUBLISH), for peers that publish with PUBLISH (Redisson with
	// shardedSubscriptionMode OFF). See Client.PublishCommand.
	DisableShardedPubSub bool
	// TopologyRefreshInterval is the period of the topology refresh of a Sentinel or cluster Client. Default
	// DefaultTopologyRefreshInterval; negative turns the periodic refresh off (errors still trigger one).
	TopologyRefreshInterval time.Duration
	// RetryTimeout bounds how long a Sentinel or cluster Client re-sends a command that was not run (see
	// DefaultRetryTimeout); the command's context bounds it too. Default DefaultRetryTimeout.
	RetryTimeout time.Duration
	// Username and Password authenticate the connection: AUTH password when Username is empty, AUTH username
	// password (Redis 6 ACL) otherwise. No AUTH is sent when both are empty.
	Username, Password string
	// DB is the database selected with SELECT after connecting; 0 sends nothing.
	DB int
	// ClientName is set with CLIENT SETNAME on every connection; empty sends nothing.
	ClientName string
	// TLS, when non-nil, makes every connection run over crypto/tls with this configuration (rediss://). gnet has
	// no TLS, so these connections use a reader and a writer goroutine each instead of the event loops.
	TLS *tls.Config

	// PoolSize is the number of connections per server for commands (the pub/sub connection is extra). Default
	// DefaultPoolSize.
	PoolSize int
	// EventLoops is the number of gnet event loops (each holds an OS thread). Default DefaultEventLoops.
	EventLoops int
	// FlushPolicy chooses when appended commands are written. Default FlushEager.
	FlushPolicy FlushPolicy
	// DisableLatencyLane removes the extra plain-TCP connection per server that serves commands issued while the
	// Client is otherwise idle through Go's netpoller instead of an event loop (see "Latency lane" in doc.go).
	// Without it a sequential caller's round trip includes an event-loop thread wake-up. Ignored with TLS, whose
	// connections all use Go's netpoller.
	DisableLatencyLane bool

	// LazyConnect makes New return without waiting for any server: it validates the Config, starts the event
	// loops and the first connection attempts (and, for Sentinel and cluster, the first topology query) in the
	// background, and succeeds while every server is down. Until a server answers, commands fail fast with a
	// *ConnError matching ErrUnavailable (a Sentinel or cluster Client first retries them within RetryTimeout);
	// connections are made, and re-made, in the background with the usual backoff (ReconnectMinBackoff doubling
	// up to ReconnectMaxBackoff, so a server that comes up is used within ReconnectMaxBackoff). A refused
	// handshake (ErrAuth, ErrInvalidConfig) is then reported by the commands instead of by New. Default false:
	// New waits for the first connections (each bounded by DialTimeout) and fails if none is made, so that a
	// wrong address or password shows at start. URL option lazy_connect.
	LazyConnect bool

	// DialTimeout bounds one connection attempt, handshake included. Default DefaultDialTimeout.
	DialTimeout time.Duration
	// ResponseTimeout is how long a connection may wait for its oldest pending reply before it is reset and all
	// its pending commands fail with an error matching ErrTimeout. Default DefaultResponseTimeout.
	ResponseTimeout time.Duration
	// PingInterval is how long a connection may stay idle before it sends a PING (whose reply is then bounded by
	// ResponseTimeout). Default DefaultPingInterval; negative disables the PING.
	PingInterval time.Duration
	// ReconnectMinBackoff and ReconnectMaxBackoff bound the jittered exponential delay between attempts to
	// re-establish a connection. Defaults DefaultReconnectMinBackoff and DefaultReconnectMaxBackoff.
	ReconnectMinBackoff, ReconnectMaxBackoff time.Duration

	// Limits bounds what the reply decoder accepts, and so the memory a reply can take: zero fields take resp's
	// defaults, which suit locks and small values — bulk strings up to 8 MiB (resp.DefaultMaxBulkLen), simple
	// strings and error lines up to 1 MiB (DefaultMaxLineLen), 262,144 array elements per reply
	// (DefaultMaxArrayLen), 16 MiB per reply (DefaultMaxReplyLen), 32 levels of nesting. Each limit is checked
	// as soon as the bytes show it broken (a bulk string's header, a line's bytes so far), and a connection
	// buffers at most MaxReplyLen of a reply still arriving. A reply over a limit fails its command, and every
	// other command in flight on that connection (the stream cannot be resynchronised), with a *ConnError
	// matching ErrConnLost whose cause holds a *resp.LimitError (errors.As) naming the limit; the connection is
	// closed and re-made as after any drop. Raise the limit for replies you expect to be larger (also the URL
	// options max_bulk_len, max_line_len, max_array_len, max_reply_len).
	Limits resp.Limits

	// Timer is the timing wheel for response timeouts, PINGs and reconnect backoff. Nil: the Client creates one
	// and stops it in Close. A shared Timer is not stopped by Close.
	Timer *timer.Timer
	// OnEvent, when set, is told of every change in the Client's connections: connected, lost (with the error),
	// reconnected, failover (a Sentinel or cluster master change), resubscribed (see Event). It is called
	// synchronously on the goroutine where the change happens — a connection attempt's goroutine, an event
	// loop, a stream reader, the timer's worker, a topology refresh — so it must not block (count, log, or hand
	// the event over without waiting) and must not call Close; it may issue commands. The events of one
	// connection come in order. A panic in it is recovered and logged. Nil: no events.
	OnEvent func(Event)
	// Logger receives connection events (drops, reconnects, protocol errors) and gnet's own messages. Nil
	// discards them.
	Logger *slog.Logger
}

// withDefaults returns c with every zero field set to its default, after validating it. Errors match
// ErrInvalidConfig and name the field.
func (c Config) withDefaults() (Config, error) {
	if err := c.checkTopology(); err != nil {
		return c, err
	}
	if c.Addr == "" && c.topology() == topoStandalone {
		c.Addr = DefaultAddr
	}
	if c.DB < 0 {
		return c, invalid("DB %d is negative", c.DB)
	}
	if c.PoolSize < 0 {
		return c, invalid("PoolSize %d is negative", c.PoolSize)
	}
	if c.PoolSize == 0 {
		c.PoolSize = DefaultPoolSize
	}
	if c.EventLoops < 0 {
		return c, invalid("EventLoops %d is negative", c.EventLoops)
	}
	if c.EventLoops == 0 {
		c.EventLoops = DefaultEventLoops
	}
	for i := 0; i < len(c.ClientName); i++ {
		if b := c.ClientName[i]; b <= ' ' || b > '~' {
			return c, invalid("ClientName %q: Redis accepts only printable ASCII without spaces (byte %d)", c.ClientName, i)
		}
	}
	if c.FlushPolicy != FlushOnReply && c.FlushPolicy != FlushEager {
		return c, invalid("FlushPolicy %d is unknown", int(c.FlushPolicy))
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"DialTimeout", &c.DialTimeout, DefaultDialTimeout},
		{"ResponseTimeout", &c.ResponseTimeout, DefaultResponseTimeout},
		{"ReconnectMinBackoff", &c.ReconnectMinBackoff, DefaultReconnectMinBackoff},
		{"ReconnectMaxBackoff", &c.ReconnectMaxBackoff, DefaultReconnectMaxBackoff},
		{"RetryTimeout", &c.RetryTimeout, DefaultRetryTimeout},
	} {
		if *d.v < 0 {
			return c, invalid("%s %v is negative", d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if c.PingInterval == 0 {
		c.PingInterval = DefaultPingInterval
	}
	if c.TopologyRefreshInterval == 0 {
		c.TopologyRefreshInterval = DefaultTopologyRefreshInterval
	}
	if c.ReconnectMaxBackoff < c.ReconnectMinBackoff {
		return c, invalid("ReconnectMaxBackoff %v is below ReconnectMinBackoff %v", c.ReconnectMaxBackoff, c.ReconnectMinBackoff)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// invalid builds an error matching ErrInvalidConfig.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
}

// topologyKind is the deployment a Config describes.
type topologyKind int

const (
	topoStandalone topologyKind = iota
	topoSentinel
	topoCluster
)

// topology returns the deployment c describes (checkTopology has rejected mixtures).
func (c *Config) topology() topologyKind {
	switch {
	case len(c.SentinelAddrs) > 0:
		return topoSentinel
	case len(c.ClusterAddrs) > 0:
		return topoCluster
	}
	return topoStandalone
}

// checkTopology rejects a Config that names more than one topology, a malformed address, a Sentinel
// configuration without a master name, and a cluster with a database other than 0.
func (c *Config) checkTopology() error {
	set := 0
	for _, on := range []bool{c.Addr != "", len(c.SentinelAddrs) > 0, len(c.ClusterAddrs) > 0} {
		if on {
			set++
		}
	}
	if set > 1 {
		return invalid("more than one of Addr, SentinelAddrs and ClusterAddrs is set; set the one that names your deployment")
	}
	for _, l := range []struct {
		name  string
		addrs []string
	}{{"Addr", []string{c.Addr}}, {"SentinelAddrs", c.SentinelAddrs}, {"ClusterAddrs", c.ClusterAddrs}} {
		for _, a := range l.addrs {
			if a == "" && l.name == "Addr" {
				continue
			}
			if _, _, err := net.SplitHostPort(a); err != nil {
				return invalid("%s: %q is not host:port: %v", l.name, a, err)
			}
		}
	}
	if len(c.SentinelAddrs) > 0 && c.MasterName == "" {
		return invalid("SentinelAddrs is set without MasterName; name the master the Sentinels monitor")
	}
	if len(c.ClusterAddrs) > 0 && c.DB != 0 {
		return invalid("DB %d with ClusterAddrs: a Redis Cluster has only database 0", c.DB)
	}
	return nil
}

// sentinelConfig returns the configuration of connections to Sentinels: c's timeouts, limits and TLS, the Sentinel
// credentials, no database.
func (c *Config) sentinelConfig() *Config {
	s := *c
	s.Username, s.Password = c.SentinelUsername, c.SentinelPassword
	s.DB = 0
	return &s
}
