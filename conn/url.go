package conn

import (
	"crypto/tls"
	"errors"
	"math"
	"net"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// urlScope says which URL schemes an option applies to.
type urlScope uint8

const (
	scopeAll      urlScope = 0
	scopeTopology urlScope = 1 // redis-sentinel:// and redis-cluster:// (and their rediss- forms)
	scopeSentinel urlScope = 2
	scopeCluster  urlScope = 3
)

// urlOption is one query option ParseURL accepts: where it applies and how.
type urlOption struct {
	scope urlScope
	apply func(c *Config, v string) error
}

// urlOptions maps each query option ParseURL accepts to the function that applies it. Anything else is an error
// that names the option, so that a typo (dial_timout) never silently leaves a default in place.
var urlOptions = map[string]urlOption{
	"dial_timeout":          {scopeAll, durationOption(func(c *Config) *time.Duration { return &c.DialTimeout })},
	"read_timeout":          {scopeAll, durationOption(func(c *Config) *time.Duration { return &c.ResponseTimeout })},
	"response_timeout":      {scopeAll, durationOption(func(c *Config) *time.Duration { return &c.ResponseTimeout })},
	"ping_interval":         {scopeAll, durationOption(func(c *Config) *time.Duration { return &c.PingInterval })},
	"reconnect_min_backoff": {scopeAll, durationOption(func(c *Config) *time.Duration { return &c.ReconnectMinBackoff })},
	"reconnect_max_backoff": {scopeAll, durationOption(func(c *Config) *time.Duration { return &c.ReconnectMaxBackoff })},
	"pool_size":             {scopeAll, intOption(func(c *Config) *int { return &c.PoolSize })},
	"event_loops":           {scopeAll, intOption(func(c *Config) *int { return &c.EventLoops })},
	"client_name": {scopeAll, func(c *Config, v string) error {
		c.ClientName = v
		return nil
	}},
	"flush_policy": {scopeAll, func(c *Config, v string) error {
		switch v {
		case FlushOnReply.String():
			c.FlushPolicy = FlushOnReply
		case FlushEager.String():
			c.FlushPolicy = FlushEager
		default:
			return errors.New("want " + FlushOnReply.String() + " or " + FlushEager.String())
		}
		return nil
	}},
	"db": {scopeSentinel, func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errors.New("want a non-negative integer")
		}
		c.DB = n
		return nil
	}},
	"sentinel_username": {scopeSentinel, func(c *Config, v string) error {
		c.SentinelUsername = v
		return nil
	}},
	"sentinel_password": {scopeSentinel, func(c *Config, v string) error {
		c.SentinelPassword = v
		return nil
	}},
	"topology_refresh_interval": {scopeTopology, durationOption(func(c *Config) *time.Duration { return &c.TopologyRefreshInterval })},
	"retry_timeout":             {scopeTopology, durationOption(func(c *Config) *time.Duration { return &c.RetryTimeout })},
	"sharded_pubsub": {scopeCluster, func(c *Config, v string) error {
		switch v {
		case "auto":
			c.DisableShardedPubSub = false
		case "off":
			c.DisableShardedPubSub = true
		default:
			return errors.New("want auto or off")
		}
		return nil
	}},
}

// ParseURL builds a Config from a URL of one of the forms
//
//	redis://[[username]:password@]host[:port][/db][?option=value&...]
//	redis-sentinel://[[username]:password@]host1[:port1][,host2[:port2]...]/mastername[?db=N&option=value&...]
//	redis-cluster://[[username]:password@]host1[:port1][,host2[:port2]...][?option=value&...]
//
// and rediss://, rediss-sentinel://, rediss-cluster:// for the same over TLS (data nodes and Sentinels alike).
// The credentials are the data nodes' (Username, Password); a Sentinel's own go in the sentinel_username and
// sentinel_password options. Ports default to 6379 (26379 for Sentinels), the host to 127.0.0.1, the database to 0
// (a Sentinel URL takes it as the db option, since the path names the master; a cluster has only database 0).
// rediss schemes set Config.TLS to a configuration that verifies the server against the system roots for the
// URL's (first) host; replace its RootCAs (or the whole Config.TLS) for a private CA.
//
// Options (each at most once): dial_timeout, read_timeout (alias response_timeout), ping_interval,
// reconnect_min_backoff, reconnect_max_backoff take a Go duration ("500ms", "3s") or a whole number of seconds;
// pool_size and event_loops take an integer; client_name a string; flush_policy on_reply or eager. Sentinel and
// cluster URLs also take topology_refresh_interval and retry_timeout (durations); Sentinel URLs db,
// sentinel_username and sentinel_password; cluster URLs sharded_pubsub (auto or off: DisableShardedPubSub). An
// unknown option, or one that does not apply to the scheme, is an error that names it. All errors match
// ErrInvalidConfig. ParseURL does not block and is safe for concurrent use.
func ParseURL(rawURL string) (Config, error) {
	var c Config
	scheme, rest, ok := strings.Cut(rawURL, "://")
	scheme = strings.ToLower(scheme)
	if !ok {
		return c, invalid("URL %q: want redis://host:port (or redis-sentinel://, redis-cluster://, rediss...)", rawURL)
	}
	var kind topologyKind
	switch scheme {
	case "redis", "redis-sentinel", "redis-cluster":
	case "rediss", "rediss-sentinel", "rediss-cluster":
		c.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	default:
		return c, invalid("URL scheme %q: want redis, rediss, redis-sentinel, rediss-sentinel, redis-cluster or rediss-cluster", scheme)
	}
	switch {
	case strings.HasSuffix(scheme, "-sentinel"):
		kind = topoSentinel
	case strings.HasSuffix(scheme, "-cluster"):
		kind = topoCluster
	}

	var rawQuery string
	if kind == topoStandalone {
		u, err := url.Parse(rawURL)
		if err != nil {
			return c, invalid("URL: %v", err)
		}
		if u.Opaque != "" {
			return c, invalid("URL %q: want redis://host:port", rawURL)
		}
		if u.User != nil {
			c.Username = u.User.Username()
			c.Password, _ = u.User.Password()
		}
		host, port := u.Hostname(), u.Port()
		if strings.Contains(u.Host, ",") {
			return c, invalid("URL hosts %q: a redis:// URL names one server (use redis-sentinel:// or redis-cluster://)", u.Host)
		}
		if host == "" {
			host = "127.0.0.1"
		} else if err := checkHost(host); err != nil {
			return c, err
		}
		if port == "" {
			port = "6379"
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return c, invalid("URL port %q: want 1-65535", port)
		}
		c.Addr = net.JoinHostPort(host, port)
		if c.TLS != nil {
			c.TLS.ServerName = host
		}
		if db := strings.Trim(u.Path, "/"); db != "" {
			n, err := strconv.Atoi(db)
			if err != nil || n < 0 {
				return c, invalid("URL database %q: want a non-negative integer", db)
			}
			c.DB = n
		}
		rawQuery = u.RawQuery
	} else {
		var path string
		rest, rawQuery, _ = strings.Cut(rest, "?")
		authority, rawPath, _ := strings.Cut(rest, "/")
		hosts := authority
		if i := strings.LastIndexByte(authority, '@'); i >= 0 {
			// Parse the credentials with net/url (percent-decoding) on a placeholder host.
			u, err := url.Parse("redis://" + authority[:i+1] + "h")
			if err != nil {
				return c, invalid("URL credentials: %v", err)
			}
			c.Username = u.User.Username()
			c.Password, _ = u.User.Password()
			hosts = authority[i+1:]
		}
		path, err := url.PathUnescape(rawPath)
		if err != nil {
			return c, invalid("URL path: %v", err)
		}
		if err := c.applyTopologyTarget(kind, hosts, path); err != nil {
			return c, err
		}
	}

	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return c, invalid("URL query: %v", err)
	}
	var unknown []string
	for name, values := range q {
		opt, ok := urlOptions[name]
		if !ok {
			unknown = append(unknown, name)
			continue
		}
		if !opt.scope.allows(kind) {
			return c, invalid("URL option %s does not apply to %s:// URLs", name, scheme)
		}
		if len(values) != 1 {
			return c, invalid("URL option %s given %d times", name, len(values))
		}
		if err := opt.apply(&c, values[0]); err != nil {
			return c, invalid("URL option %s=%q: %v", name, values[0], err)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		known := make([]string, 0, len(urlOptions))
		for name := range urlOptions {
			known = append(known, name)
		}
		sort.Strings(known)
		return c, invalid("unknown URL option(s) %s (known: %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return c, nil
}

// allows reports whether an option of this scope applies to a URL of kind.
func (s urlScope) allows(kind topologyKind) bool {
	switch s {
	case scopeTopology:
		return kind != topoStandalone
	case scopeSentinel:
		return kind == topoSentinel
	case scopeCluster:
		return kind == topoCluster
	}
	return true
}

// applyTopologyTarget sets the Sentinel or seed addresses (and the master name) from a URL's host list and path.
// Each host is parsed by net/url, so that it is unescaped (IPv6 zones) as in a redis:// URL.
func (c *Config) applyTopologyTarget(kind topologyKind, hosts, path string) error {
	defPort := "6379"
	if kind == topoSentinel {
		defPort = "26379"
	}
	var addrs []string
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return invalid("URL host list %q has an empty entry", hosts)
		}
		u, err := url.Parse("redis://" + h)
		if err != nil || u.User != nil || u.Path != "" || u.RawQuery != "" {
			return invalid("URL host %q: want host or host:port", h)
		}
		host, port := u.Hostname(), u.Port()
		if host == "" {
			host = "127.0.0.1"
		} else if err := checkHost(host); err != nil {
			return err
		}
		if port == "" {
			port = defPort
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return invalid("URL port %q: want 1-65535", port)
		}
		addrs = append(addrs, net.JoinHostPort(host, port))
	}
	if c.TLS != nil {
		c.TLS.ServerName, _, _ = net.SplitHostPort(addrs[0])
	}
	path = strings.Trim(path, "/")
	if kind == topoSentinel {
		if path == "" || strings.Contains(path, "/") {
			return invalid("URL path %q: a Sentinel URL names the master: redis-sentinel://host:port/mastername", path)
		}
		c.SentinelAddrs, c.MasterName = addrs, path
		return nil
	}
	if path != "" {
		return invalid("URL path %q: a cluster URL has none (a cluster has only database 0)", path)
	}
	c.ClusterAddrs = addrs
	return nil
}

// checkHost rejects a URL host (as net/url unescapes it) that cannot be dialled, so that the mistake is reported
// by ParseURL, naming the host, instead of surfacing at the first dial: an IP address (an IPv6 one, with or without
// a zone, came in brackets) or a DNS name of letters, digits, '-' and '_' in dot-separated labels (a trailing dot
// is allowed). net/url lets through hosts such as "]" (from "redis://]") and ":" (from "redis://::", an IPv6
// address without its brackets), which would make the Addrs "]:6379" and "[:]:6379".
func checkHost(host string) error {
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if strings.Contains(host, ":") {
		return invalid("URL host %q: not an IP address (write an IPv6 address in brackets: redis://[::1]:6379)", host)
	}
	if len(host) > 253 {
		return invalid("URL host %q: a host name has at most 253 characters", host)
	}
	name := strings.TrimSuffix(host, ".")
	for _, label := range strings.Split(name, ".") {
		if label == "" {
			return invalid("URL host %q: empty label in the host name", host)
		}
		if len(label) > 63 {
			return invalid("URL host %q: label %q is longer than 63 characters", host, label)
		}
		for _, r := range label {
			if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_') {
				return invalid("URL host %q: character %q is not allowed in a host name (letters, digits, '-', '_' and "+
					"dots; an internationalised name in its punycode form)", host, r)
			}
		}
	}
	return nil
}

// durationOption parses a Go duration, or a whole number of seconds as other Redis clients' URLs use.
func durationOption(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			if n > math.MaxInt64/int64(time.Second) || n < math.MinInt64/int64(time.Second) {
				return errors.New("too many seconds for a duration")
			}
			*field(c) = time.Duration(n) * time.Second
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return errors.New("want a duration such as 500ms or 3s, or whole seconds")
		}
		*field(c) = d
		return nil
	}
}

// intOption parses a decimal integer.
func intOption(field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return errors.New("want an integer")
		}
		*field(c) = n
		return nil
	}
}
