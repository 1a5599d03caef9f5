package conn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"net/url"
	"os"
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
	"max_bulk_len":          {scopeAll, sizeOption(func(c *Config) *int64 { return &c.Limits.MaxBulkLen })},
	"max_line_len":          {scopeAll, sizeOption(func(c *Config) *int64 { return &c.Limits.MaxLineLen })},
	"max_reply_len":         {scopeAll, sizeOption(func(c *Config) *int64 { return &c.Limits.MaxReplyLen })},
	"max_array_len": {scopeAll, func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return errors.New("want a positive number of elements")
		}
		c.Limits.MaxArrayLen = n
		return nil
	}},
	"lazy_connect": {scopeAll, boolOption(func(c *Config) *bool { return &c.LazyConnect })},
	"tls_ca_file": {scopeAll, tlsOption(func(t *tls.Config, v string) error {
		pool, err := loadCAFile(v)
		t.RootCAs = pool
		return err
	})},
	// Loaded together once the query is read (parseURL): each alone is an error.
	"tls_cert_file": {scopeAll, tlsOption(func(*tls.Config, string) error { return nil })},
	"tls_key_file":  {scopeAll, tlsOption(func(*tls.Config, string) error { return nil })},
	"tls_insecure_skip_verify": {scopeAll, tlsOption(func(t *tls.Config, v string) error {
		switch v {
		case "true", "1":
			t.InsecureSkipVerify = true
		case "false", "0":
			t.InsecureSkipVerify = false
		default:
			return errors.New("want true or false")
		}
		return nil
	})},
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

// ParseURL builds a Config from a URL. It (and rlock.NewClientFromURL, which calls it) accepts these schemes, in
// any letter case, and nothing else:
//
//	scheme              deployment                          form
//	redis://            one server                          redis://[[user]:password@]host[:port][/db][?options]
//	rediss://           one server, over TLS                rediss://[[user]:password@]host[:port][/db][?options]
//	redis-sentinel://   master found through Sentinel       redis-sentinel://[[user]:password@]host1[:port1][,host2[:port2]...]/mastername[?options]
//	rediss-sentinel://  the same, over TLS (Sentinels too)  rediss-sentinel://...
//	redis-cluster://    Redis Cluster, from seed nodes      redis-cluster://[[user]:password@]host1[:port1][,host2[:port2]...][?options]
//	rediss-cluster://   the same, over TLS                  rediss-cluster://...
//
// The user info holds the data nodes' credentials (Username, Password; user alone is a user without password);
// percent-escape what a password holds of '%', '@', '/', '?', '#' and ':' (%25 %40 %2F %3F %23 %3A), since an
// unescaped one would change what the rest of the URL means: an '@' after the host and any '#' are errors, so a
// password never ends up as a port, a path or a query. Ports default to 6379 (26379 for Sentinels), the host to
// 127.0.0.1 (write IPv6 addresses in brackets), the database to 0 (a Sentinel URL takes it as the db option,
// since the path names the master; a cluster has only database 0). The rediss schemes set Config.TLS to verify the
// servers against the system roots (or tls_ca_file) for the URL's (first) host, TLS 1.2 or later.
//
// Options, each at most once (an unknown one, or one that does not apply to the scheme, is an error naming it):
//
//	option                     schemes            Config field             value
//	dial_timeout               all                DialTimeout              duration ("500ms", "3s") or whole seconds
//	read_timeout               all                ResponseTimeout          duration or whole seconds
//	response_timeout           all                ResponseTimeout          the same as read_timeout
//	ping_interval              all                PingInterval             duration or whole seconds; negative: no PING
//	reconnect_min_backoff      all                ReconnectMinBackoff      duration or whole seconds
//	reconnect_max_backoff      all                ReconnectMaxBackoff      duration or whole seconds
//	pool_size                  all                PoolSize                 integer
//	event_loops                all                EventLoops               integer
//	client_name                all                ClientName               printable ASCII, no spaces
//	flush_policy               all                FlushPolicy              eager or on_reply
//	max_bulk_len               all                Limits.MaxBulkLen        size: bytes, or with KiB, MiB, GiB (8MiB)
//	max_line_len               all                Limits.MaxLineLen        size
//	max_reply_len              all                Limits.MaxReplyLen       size
//	max_array_len              all                Limits.MaxArrayLen       positive number of elements
//	lazy_connect               all                LazyConnect              true or false (default false)
//	tls_ca_file                rediss*            TLS.RootCAs              PEM file of the CA(s) to trust instead of the system's
//	tls_cert_file              rediss*            TLS.Certificates         PEM file of the client certificate (with tls_key_file)
//	tls_key_file               rediss*            TLS.Certificates         PEM file of its private key (with tls_cert_file)
//	tls_insecure_skip_verify   rediss*            TLS.InsecureSkipVerify   true or false (default false): no server check at all
//	topology_refresh_interval  sentinel, cluster  TopologyRefreshInterval  duration or whole seconds
//	retry_timeout              sentinel, cluster  RetryTimeout             duration or whole seconds
//	db                         sentinel           DB                       non-negative integer
//	sentinel_username          sentinel           SentinelUsername         string
//	sentinel_password          sentinel           SentinelPassword         string (hidden in every message)
//	sharded_pubsub             cluster            DisableShardedPubSub     auto or off (off sets it)
//
// The TLS options apply to the rediss schemes only (elsewhere they are an error); ParseURL reads their files when
// it runs. tls_insecure_skip_verify accepts any server certificate for any name, which lets anyone on the path read
// and change the traffic: for tests only. Unset options keep the Default* constant of their field. Every error
// matches ErrInvalidConfig and quotes the URL as RedactURL does, passwords hidden. ParseURL reads the files the TLS
// options name and otherwise does not block; it is safe for concurrent use.
func ParseURL(rawURL string) (Config, error) {
	c, err := parseURL(rawURL)
	if err != nil {
		// Every message quotes the URL with its secrets hidden, and names the part at fault in words; net/url's
		// own messages quote the URL, or parts of it, verbatim.
		return Config{}, invalid("URL %s: %v", strconv.QuoteToASCII(RedactURL(rawURL)), err)
	}
	return c, nil
}

// parseURL is ParseURL without the wrapping of its errors. Its messages may quote the host, port, path and
// options, but never a part of the URL that can hold a password: the user info, and a password-bearing option's
// value.
func parseURL(rawURL string) (Config, error) {
	var c Config
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return c, errors.New("want redis://host:port (or rediss://, redis-sentinel://, redis-cluster://...)")
	}
	scheme = strings.ToLower(scheme)
	var kind topologyKind
	switch scheme {
	case "redis", "redis-sentinel", "redis-cluster":
	case "rediss", "rediss-sentinel", "rediss-cluster":
		c.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	default:
		shown := "the scheme" // quoted only when it cannot be a piece of user info (u:pw@h://...)
		if strings.Trim(scheme, "abcdefghijklmnopqrstuvwxyz0123456789+-.") == "" {
			shown = "scheme " + strconv.Quote(scheme)
		}
		return c, errors.New(shown + ": want redis, rediss, redis-sentinel, rediss-sentinel, redis-cluster or rediss-cluster")
	}
	switch {
	case strings.HasSuffix(scheme, "-sentinel"):
		kind = topoSentinel
	case strings.HasSuffix(scheme, "-cluster"):
		kind = topoCluster
	}
	// The user info ends at the last '@' before the end of the authority (the first '/', '?' or '#'). An '@'
	// further on almost always means a password holding an unescaped '/', '?' or '#', which would otherwise make a
	// piece of it parse as the port, the path or the query, and then show up in messages and dial errors.
	authEnd := len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authEnd = i
	}
	if strings.IndexByte(rest[authEnd:], '@') >= 0 {
		return c, errors.New("'@' after the host: percent-escape '/', '?', '#' and '@' in a password (%2F, %3F, %23, %40) and '@' anywhere else (%40)")
	}
	if strings.IndexByte(rest, '#') >= 0 {
		return c, errors.New("'#' starts a fragment, which a Redis URL has none of: percent-escape it (%23)")
	}

	var rawQuery string
	if kind == topoStandalone {
		u, err := url.Parse(rawURL)
		if err != nil {
			return c, urlSyntaxError(err)
		}
		if u.Opaque != "" {
			return c, errors.New("want redis://host:port")
		}
		if u.User != nil {
			c.Username = u.User.Username()
			c.Password, _ = u.User.Password()
		}
		host, port := u.Hostname(), u.Port()
		if strings.Contains(u.Host, ",") {
			return c, fmt.Errorf("hosts %q: a redis:// URL names one server (use redis-sentinel:// or redis-cluster://)", u.Host)
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
			return c, fmt.Errorf("port %q: want 1-65535", port)
		}
		c.Addr = net.JoinHostPort(host, port)
		if c.TLS != nil {
			c.TLS.ServerName = host
		}
		if db := strings.Trim(u.Path, "/"); db != "" {
			n, err := strconv.Atoi(db)
			if err != nil || n < 0 {
				return c, fmt.Errorf("database %q: want a non-negative integer", db)
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
				return c, urlSyntaxError(err)
			}
			c.Username = u.User.Username()
			c.Password, _ = u.User.Password()
			hosts = authority[i+1:]
		}
		path, err := url.PathUnescape(rawPath)
		if err != nil {
			return c, errors.New("path: invalid percent-escape (write a literal % as %25)")
		}
		if err := c.applyTopologyTarget(kind, hosts, path); err != nil {
			return c, err
		}
	}

	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return c, errors.New("query: invalid percent-escape or ';' (write a literal % as %25, ';' as %3B)")
	}
	var unknown []string
	for name, values := range q {
		opt, ok := urlOptions[name]
		if !ok {
			unknown = append(unknown, name)
			continue
		}
		if !opt.scope.allows(kind) {
			return c, fmt.Errorf("option %s does not apply to %s:// URLs", name, scheme)
		}
		if len(values) != 1 {
			return c, fmt.Errorf("option %s given %d times", name, len(values))
		}
		if err := opt.apply(&c, values[0]); err != nil {
			if strings.Contains(name, "password") {
				return c, fmt.Errorf("option %s: %v", name, err)
			}
			return c, fmt.Errorf("option %s=%q: %v", name, values[0], err)
		}
	}
	if certFile, keyFile := q.Get("tls_cert_file"), q.Get("tls_key_file"); certFile != "" || keyFile != "" {
		if certFile == "" || keyFile == "" {
			return c, errors.New("options tls_cert_file and tls_key_file go together: the client certificate and its key")
		}
		certPEM, err := readPEMFile(certFile)
		if err != nil {
			return c, fmt.Errorf("option tls_cert_file: %v", err)
		}
		keyPEM, err := readPEMFile(keyFile)
		if err != nil {
			return c, fmt.Errorf("option tls_key_file: %v", err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return c, fmt.Errorf("options tls_cert_file=%q, tls_key_file=%q: %v", certFile, keyFile, err)
		}
		c.TLS.Certificates = []tls.Certificate{pair}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		known := make([]string, 0, len(urlOptions))
		for name := range urlOptions {
			known = append(known, name)
		}
		sort.Strings(known)
		return c, fmt.Errorf("unknown option(s) %s (known: %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return c, nil
}

// urlSyntaxError describes a net/url parse error in words, without quoting the URL or any part of it: net/url's
// messages quote the URL, or the bytes around the fault, which may be a password's.
func urlSyntaxError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ee url.EscapeError
	var he url.InvalidHostError
	switch msg := err.Error(); {
	case errors.As(err, &ee):
		return errors.New("invalid percent-escape (write a literal % as %25, in a password too)")
	case errors.As(err, &he):
		return errors.New("invalid character in the host")
	case strings.HasPrefix(msg, "invalid port"):
		return errors.New("invalid port after the host (a port is 1-65535; a password holding ':' needs the user info, user:password@)")
	case !strings.Contains(msg, `"`):
		return errors.New(msg) // a fixed message such as "invalid control character in URL"
	}
	return errors.New("malformed URL")
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
			return fmt.Errorf("host list %q has an empty entry", hosts)
		}
		u, err := url.Parse("redis://" + h)
		if err != nil || u.User != nil || u.Path != "" || u.RawQuery != "" {
			return fmt.Errorf("host %q: want host or host:port", h)
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
			return fmt.Errorf("port %q: want 1-65535", port)
		}
		addrs = append(addrs, net.JoinHostPort(host, port))
	}
	if c.TLS != nil {
		c.TLS.ServerName, _, _ = net.SplitHostPort(addrs[0])
	}
	path = strings.Trim(path, "/")
	if kind == topoSentinel {
		if path == "" || strings.Contains(path, "/") {
			return fmt.Errorf("path %q: a Sentinel URL names the master: redis-sentinel://host:port/mastername", path)
		}
		c.SentinelAddrs, c.MasterName = addrs, path
		return nil
	}
	if path != "" {
		return fmt.Errorf("path %q: a cluster URL has none (a cluster has only database 0)", path)
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
		return fmt.Errorf("host %q: not an IP address (write an IPv6 address in brackets: redis://[::1]:6379)", host)
	}
	if len(host) > 253 {
		return fmt.Errorf("host %q: a host name has at most 253 characters", host)
	}
	name := strings.TrimSuffix(host, ".")
	for _, label := range strings.Split(name, ".") {
		if label == "" {
			return fmt.Errorf("host %q: empty label in the host name", host)
		}
		if len(label) > 63 {
			return fmt.Errorf("host %q: label %q is longer than 63 characters", host, label)
		}
		for _, r := range label {
			if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_') {
				return fmt.Errorf("host %q: character %q is not allowed in a host name (letters, digits, '-', '_' and "+
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

// sizeOption parses a positive number of bytes, written plainly or with a binary suffix: 8388608, 8192KiB, 8MiB,
// 1GiB.
func sizeOption(field func(*Config) *int64) func(*Config, string) error {
	return func(c *Config, v string) error {
		digits, unit := v, int64(1)
		for _, u := range []struct {
			suffix string
			size   int64
		}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
			if rest, ok := strings.CutSuffix(v, u.suffix); ok {
				digits, unit = rest, u.size
				break
			}
		}
		n, err := strconv.ParseInt(digits, 10, 64)
		if err != nil || n <= 0 || n > math.MaxInt64/unit {
			return errors.New("want a positive size in bytes, optionally with a KiB, MiB or GiB suffix (8MiB)")
		}
		*field(c) = n * unit
		return nil
	}
}

// tlsOption applies a TLS option to Config.TLS, which only the rediss schemes set.
func tlsOption(apply func(*tls.Config, string) error) func(*Config, string) error {
	return func(c *Config, v string) error {
		if c.TLS == nil {
			return errors.New("a TLS option needs a rediss scheme (rediss://, rediss-sentinel://, rediss-cluster://)")
		}
		if v == "" {
			return errors.New("empty")
		}
		return apply(c.TLS, v)
	}
}

// maxPEMFile bounds what the TLS options read: a CA bundle of a few hundred certificates is well under it.
const maxPEMFile = 4 << 20

// readPEMFile reads a regular file of at most maxPEMFile bytes (not a device or a pipe, which could block or never
// end).
func readPEMFile(path string) ([]byte, error) {
	// Stat first: opening a named pipe for reading would block until a writer comes.
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() || st.Size() > maxPEMFile {
		return nil, errors.New(strconv.Quote(path) + " is not a regular file of at most 4 MiB")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxPEMFile))
}

// loadCAFile reads a PEM file of one or more CA certificates into a pool that replaces the system roots.
func loadCAFile(path string) (*x509.CertPool, error) {
	pem, err := readPEMFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("no PEM certificate in " + strconv.Quote(path))
	}
	return pool, nil
}

// boolOption parses true or false (also 1 or 0).
func boolOption(field func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		switch v {
		case "true", "1":
			*field(c) = true
		case "false", "0":
			*field(c) = false
		default:
			return errors.New("want true or false")
		}
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
