package redistest

import "time"

// Settings of the servers and topologies. Those named Default* are what applies
// when no Option overrides them; the others are fixed.
const (
	// StartTimeout bounds how long a start waits for a server to answer PING
	// (per process, port retries included).
	StartTimeout = 10 * time.Second

	// DefaultStopTimeout bounds how long Close waits after SIGTERM before it
	// sends SIGKILL.
	DefaultStopTimeout = 5 * time.Second

	// MasterName is the name under which the Sentinels of a replica set monitor
	// the master.
	MasterName = "mymaster"

	// SentinelDownAfter is the Sentinels' down-after-milliseconds: how
	// long the master may stay silent before a failover starts. A SIGKILLed
	// master is replaced after about this plus 1.3 s. 1 s was tried first: on
	// a loaded 2-core machine a freshly promoted master's PONG was sometimes
	// late by more than that, and a second, spurious failover followed.
	SentinelDownAfter = 2 * time.Second

	// DefaultClusterNodeTimeout is the cluster-node-timeout of cluster nodes:
	// how long a master may stay silent before its replica takes over.
	DefaultClusterNodeTimeout = 2 * time.Second
)

// Option configures a server or a topology. Options that concern one server
// (WithPersistence, WithConfig, WithPassword, WithACLUser, WithTLS) apply to
// every member of a topology.
type Option func(*options)

type aclUser struct{ name, pass string }

// options holds the resolved configuration; it is immutable once a server or
// topology has been started from it.
type options struct {
	persistence    bool
	config         [][2]string
	password       string
	users          []aclUser
	tls            bool
	port           int
	stopTimeout    time.Duration
	clusterTimeout time.Duration
}

func newOptions(opts []Option) options {
	o := options{
		stopTimeout:    DefaultStopTimeout,
		clusterTimeout: DefaultClusterNodeTimeout,
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithPersistence turns on the append-only file with appendfsync always, so
// that everything the server acknowledged survives a Kill and Restart: with
// always, Redis writes the AOF and fsyncs it before it replies. With Redis'
// default, everysec, that does not hold: while a background fsync is slow
// (a disk stall) Redis postpones writing the AOF for up to 2 s and still
// replies, so a SIGKILL in that window loses acknowledged writes (the chaos
// soak saw a server come back without its last 0.7 s of lock grants). A test
// that wants everysec adds WithConfig("appendfsync", "everysec").
func WithPersistence() Option { return func(o *options) { o.persistence = true } }

// WithConfig adds the config file line "key value" after the defaults, so it
// overrides them. The value is written verbatim, so directives with several
// words work (WithConfig("client-output-buffer-limit", "pubsub 32mb 8mb 60"));
// an empty value is written as "".
func WithConfig(key, value string) Option {
	return func(o *options) { o.config = append(o.config, [2]string{key, value}) }
}

// WithPassword sets requirepass (the default user's password). URL and the
// admin client Do use it.
func WithPassword(password string) Option { return func(o *options) { o.password = password } }

// WithACLUser adds an ACL user with all permissions (~* &* +@all). The first
// user added appears in URL. The default user is left as it is (no password
// unless WithPassword is also given); Do authenticates as the default user when
// it has a password and otherwise as the first ACL user.
func WithACLUser(user, password string) Option {
	return func(o *options) { o.users = append(o.users, aclUser{user, password}) }
}

// WithTLS serves TLS only: port 0 and tls-port on the chosen port, with a CA,
// a server and a client certificate generated into the server's directory.
// Client certificates are optional (tls-auth-clients optional); the
// *tls.Config from TLSConfig trusts the CA and presents the client certificate.
func WithTLS() Option { return func(o *options) { o.tls = true } }

// WithPort uses this port instead of a random free one. A start that cannot
// bind it fails instead of retrying another port. Topologies ignore it.
func WithPort(port int) Option { return func(o *options) { o.port = port } }

// WithClusterNodeTimeout sets cluster nodes' cluster-node-timeout (default
// DefaultClusterNodeTimeout).
func WithClusterNodeTimeout(d time.Duration) Option {
	return func(o *options) {
		if d >= time.Millisecond {
			o.clusterTimeout = d
		}
	}
}
