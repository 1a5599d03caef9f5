package conn

import (
	"errors"
	"net"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzParseURL feeds arbitrary strings to ParseURL and checks what it promises:
//   - it never panics, and every error matches ErrInvalidConfig;
//   - it is deterministic: a second call gives the same Config (or an error again);
//   - a Config it returns has a non-negative DB, a standalone Addr with a port in 1-65535, and TLS exactly for the
//     rediss schemes, with ServerName set to the host of a standalone Addr;
//   - every option the query gave is in its field with its value: a whole number of seconds n gives exactly n
//     seconds, a Go duration its value, an integer its value, client_name its string.
//   - a standalone Addr is usable: ParseURL("redis://"+Addr) gives the same Addr back (net/url alone let "]" and
//     ":" through as hosts, making the Addrs "]:6379" and "[:]:6379").
//
// Run it with: go test -run '^$' -fuzz '^FuzzParseURL$' ./conn
// The seed corpus is the URLs below plus testdata/fuzz/FuzzParseURL.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"redis://127.0.0.1:6379",
		"redis://alice:s3cret@db.example:6380/3?dial_timeout=250ms&read_timeout=2&pool_size=4&client_name=svc&ping_interval=1s&flush_policy=on_reply&event_loops=2&reconnect_min_backoff=10ms&reconnect_max_backoff=1s",
		"rediss://cache.internal:6390",
		"redis://:pw@",
		"redis://[::1]:6379/0",
		"redis://h:1?response_timeout=-5s",
		"redis://h:1?pool_size=1&pool_size=2",
		"redis://h:1?dial_timout=1s",
		"redis://h:1/x",
		"redis://h:1?%zz",
		"redis:opaque",
		"http://h:1",
		"redis://u%20ser:p%40ss@h",
		"redis://h:99999999",
		"redis://]",
		"redis://::",
		"redis://[fe80::1%25eth0]:7000",
		"redis-sentinel://s1:26379,s2/mymaster?db=2",
		"rediss-cluster://n1:7000,n2:7001?pool_size=2",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := ParseURL(raw)
		c2, err2 := ParseURL(raw)
		if (err == nil) != (err2 == nil) || (err == nil && !sameConfig(c, c2)) {
			t.Fatalf("ParseURL(%q) is not deterministic: %+v, %v then %+v, %v", raw, c, err, c2, err2)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("ParseURL(%q) error %v does not match ErrInvalidConfig", raw, err)
			}
			return
		}
		scheme, _, _ := strings.Cut(raw, "://")
		if strings.HasPrefix(strings.ToLower(scheme), "rediss") != (c.TLS != nil) { // schemes are case-insensitive
			t.Fatalf("ParseURL(%q): scheme %q but TLS %v", raw, scheme, c.TLS)
		}
		if c.DB < 0 {
			t.Fatalf("ParseURL(%q).DB = %d", raw, c.DB)
		}
		if c.Addr != "" {
			host, port, serr := net.SplitHostPort(c.Addr)
			if n, perr := strconv.Atoi(port); serr == nil && (perr != nil || n < 1 || n > 65535) {
				t.Fatalf("ParseURL(%q).Addr = %q: the port is not in 1-65535", raw, c.Addr)
			}
			if serr == nil && c.TLS != nil && c.TLS.ServerName != host {
				t.Fatalf("ParseURL(%q): TLS ServerName %q, want %q", raw, c.TLS.ServerName, host)
			}
			// A zone's '%' is escaped in a URL.
			if again, err := ParseURL("redis://" + strings.ReplaceAll(c.Addr, "%", "%25")); err != nil || again.Addr != c.Addr {
				t.Fatalf("ParseURL(%q).Addr = %q, which does not parse back to itself: %q, %v", raw, c.Addr, again.Addr, err)
			}
		}
		if _, query, ok := strings.Cut(raw, "?"); ok && !strings.Contains(raw, "#") { // '#' starts a fragment
			checkOptions(t, raw, query, c)
		}
	})
}

// checkOptions checks that every option of the query landed in its field with its value.
func checkOptions(t *testing.T, raw, query string, c Config) {
	t.Helper()
	q, err := url.ParseQuery(query)
	if err != nil {
		t.Fatalf("ParseURL(%q) accepted a query that url.ParseQuery rejects: %v", raw, err)
	}
	durations := map[string]time.Duration{
		"dial_timeout": c.DialTimeout, "read_timeout": c.ResponseTimeout, "response_timeout": c.ResponseTimeout,
		"ping_interval": c.PingInterval, "reconnect_min_backoff": c.ReconnectMinBackoff,
		"reconnect_max_backoff": c.ReconnectMaxBackoff,
	}
	ints := map[string]int{"pool_size": c.PoolSize, "event_loops": c.EventLoops}
	for name, values := range q {
		if len(values) != 1 {
			t.Fatalf("ParseURL(%q) accepted option %s given %d times", raw, name, len(values))
		}
		v := values[0]
		if got, ok := durations[name]; ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				if n < -9223372036 || n > 9223372036 || got != time.Duration(n)*time.Second {
					t.Fatalf("ParseURL(%q): %s=%s gave %v (beyond ±9223372036 s it must be an error)", raw, name, v, got)
				}
				continue
			}
			if want, err := time.ParseDuration(v); err != nil || got != want {
				t.Fatalf("ParseURL(%q): %s=%s gave %v (ParseDuration: %v, %v)", raw, name, v, got, want, err)
			}
			continue
		}
		if got, ok := ints[name]; ok {
			if want, err := strconv.Atoi(v); err != nil || got != want {
				t.Fatalf("ParseURL(%q): %s=%s gave %d", raw, name, v, got)
			}
			continue
		}
		if name == "client_name" && c.ClientName != v {
			t.Fatalf("ParseURL(%q): client_name=%q gave %q", raw, v, c.ClientName)
		}
	}
}

// sameConfig compares two Configs, TLS by the fields ParseURL sets.
func sameConfig(a, b Config) bool {
	if (a.TLS == nil) != (b.TLS == nil) {
		return false
	}
	if a.TLS != nil && (a.TLS.ServerName != b.TLS.ServerName || a.TLS.MinVersion != b.TLS.MinVersion) {
		return false
	}
	a.TLS, b.TLS = nil, nil
	return reflect.DeepEqual(a, b)
}
