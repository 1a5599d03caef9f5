package conn_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/resp"
)

func TestParseURLFields(t *testing.T) {
	cfg, err := conn.ParseURL("redis://alice:s3cret@db.example:6380/3?dial_timeout=250ms&read_timeout=2&pool_size=4&client_name=svc&ping_interval=1s&flush_policy=on_reply&event_loops=2&reconnect_min_backoff=10ms&reconnect_max_backoff=1s")
	if err != nil {
		t.Fatal(err)
	}
	want := conn.Config{
		Addr: "db.example:6380", Username: "alice", Password: "s3cret", DB: 3, ClientName: "svc",
		PoolSize: 4, EventLoops: 2, FlushPolicy: conn.FlushOnReply,
		DialTimeout: 250 * time.Millisecond, ResponseTimeout: 2 * time.Second, PingInterval: time.Second,
		ReconnectMinBackoff: 10 * time.Millisecond, ReconnectMaxBackoff: time.Second,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("ParseURL =\n%+v\nwant\n%+v", cfg, want)
	}
}

func TestParseURLDefaultsAndPasswordOnly(t *testing.T) {
	cfg, err := conn.ParseURL("redis://:pw@")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:6379" || cfg.Username != "" || cfg.Password != "pw" || cfg.DB != 0 || cfg.TLS != nil {
		t.Fatalf("ParseURL = %+v", cfg)
	}
}

func TestParseURLRedissSetsTLSWithServerName(t *testing.T) {
	cfg, err := conn.ParseURL("rediss://cache.internal:6390")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLS == nil || cfg.TLS.ServerName != "cache.internal" || cfg.Addr != "cache.internal:6390" {
		t.Fatalf("ParseURL = %+v (TLS %+v)", cfg, cfg.TLS)
	}
}

func TestParseURLRejectsUnknownOptionsByName(t *testing.T) {
	_, err := conn.ParseURL("redis://h:1/0?dial_timout=1s&pool_size=2&frobnicate=yes")
	if !errors.Is(err, conn.ErrInvalidConfig) {
		t.Fatalf("err = %v; want ErrInvalidConfig", err)
	}
	for _, name := range []string{"dial_timout", "frobnicate"} {
		if !strings.Contains(err.Error(), name) {
			t.Fatalf("err = %q; want it to name %q", err, name)
		}
	}
	_, after, _ := strings.Cut(err.Error(), "unknown option(s)")
	if unknown, _, _ := strings.Cut(after, "(known"); strings.Contains(unknown, "pool_size") {
		t.Fatalf("err = %q names a known option as unknown", err)
	}
}

func TestParseURLRejectsBadValues(t *testing.T) {
	for _, u := range []string{
		"http://h:1",
		"redis://h:1/x",
		"redis://h:1/-1",
		"redis://h:1?pool_size=many",
		"redis://h:1?dial_timeout=soon",
		"redis://h:1?flush_policy=sometimes",
		"redis://h:1?pool_size=1&pool_size=2",
		"redis://h:1?%zz",
	} {
		if _, err := conn.ParseURL(u); !errors.Is(err, conn.ErrInvalidConfig) {
			t.Errorf("ParseURL(%q) err = %v; want ErrInvalidConfig", u, err)
		}
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	for _, cfg := range []conn.Config{
		{Addr: "no-port"},
		{Addr: "h:1", PoolSize: -1},
		{Addr: "h:1", DB: -2},
		{Addr: "h:1", DialTimeout: -time.Second},
		{Addr: "h:1", ReconnectMinBackoff: time.Second, ReconnectMaxBackoff: time.Millisecond},
		{Addr: "h:1", FlushPolicy: 7},
	} {
		if c, err := conn.New(cfg); !errors.Is(err, conn.ErrInvalidConfig) {
			if c != nil {
				c.Close()
			}
			t.Errorf("New(%+v) err = %v; want ErrInvalidConfig", cfg, err)
		}
	}
}

func TestParseURLSentinel(t *testing.T) {
	cfg, err := conn.ParseURL("redis-sentinel://app:p%40ss@s1:26380,s2,[::1]:26381/my%20master?db=2&sentinel_password=spw&sentinel_username=sen&retry_timeout=2s&topology_refresh_interval=1s&pool_size=3")
	if err != nil {
		t.Fatal(err)
	}
	want := conn.Config{
		SentinelAddrs: []string{"s1:26380", "s2:26379", "[::1]:26381"}, MasterName: "my master",
		Username: "app", Password: "p@ss", SentinelUsername: "sen", SentinelPassword: "spw", DB: 2,
		RetryTimeout: 2 * time.Second, TopologyRefreshInterval: time.Second, PoolSize: 3,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("ParseURL =\n%+v\nwant\n%+v", cfg, want)
	}
	cfg, err = conn.ParseURL("rediss-sentinel://vault:26379/m")
	if err != nil || cfg.TLS == nil || cfg.TLS.ServerName != "vault" || cfg.MasterName != "m" {
		t.Fatalf("rediss-sentinel: %+v, %v", cfg, err)
	}
}

func TestParseURLCluster(t *testing.T) {
	cfg, err := conn.ParseURL("redis-cluster://:pw@n1:7000,n2:7001,n3?sharded_pubsub=off&retry_timeout=500ms")
	if err != nil {
		t.Fatal(err)
	}
	want := conn.Config{
		ClusterAddrs: []string{"n1:7000", "n2:7001", "n3:6379"}, Password: "pw", DisableShardedPubSub: true,
		RetryTimeout: 500 * time.Millisecond,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("ParseURL =\n%+v\nwant\n%+v", cfg, want)
	}
	if cfg, err := conn.ParseURL("rediss-cluster://n1:7000"); err != nil || cfg.TLS == nil || cfg.TLS.ServerName != "n1" {
		t.Fatalf("rediss-cluster: %+v, %v", cfg, err)
	}
}

func TestParseURLRejectsBadTopologyURLs(t *testing.T) {
	for u, mention := range map[string]string{
		"redis-sentinel://s1:26379":                  "names the master",
		"redis-sentinel://s1:26379/a/b":              "names the master",
		"redis-sentinel://s1:26379,/m":               "empty entry",
		"redis-cluster://n1:7000/3":                  "database 0",
		"redis://h1:1,h2:2":                          "one server",
		"redis://h:1?retry_timeout=1s":               "does not apply",
		"redis-cluster://n1:1?sentinel_password=x":   "does not apply",
		"redis-sentinel://s:1/m?sharded_pubsub=off":  "does not apply",
		"redis-cluster://n1:1?sharded_pubsub=always": "auto or off",
		"redis-sentinel://s:99999/m":                 "port",
		"redis-sentinel://s:1/m?db=-1":               "non-negative",
	} {
		_, err := conn.ParseURL(u)
		if !errors.Is(err, conn.ErrInvalidConfig) || !strings.Contains(err.Error(), mention) {
			t.Errorf("ParseURL(%q) err = %v; want ErrInvalidConfig mentioning %q", u, err, mention)
		}
	}
}

func TestNewRejectsInvalidTopologyConfig(t *testing.T) {
	for _, cfg := range []conn.Config{
		{Addr: "h:1", ClusterAddrs: []string{"n:1"}},
		{SentinelAddrs: []string{"s:1"}, ClusterAddrs: []string{"n:1"}},
		{SentinelAddrs: []string{"s:1"}},
		{SentinelAddrs: []string{"nope"}, MasterName: "m"},
		{ClusterAddrs: []string{"n:1"}, DB: 1},
		{ClusterAddrs: []string{"n:1"}, RetryTimeout: -time.Second},
	} {
		if c, err := conn.New(cfg); !errors.Is(err, conn.ErrInvalidConfig) {
			if c != nil {
				c.Close()
			}
			t.Errorf("New(%+v) err = %v; want ErrInvalidConfig", cfg, err)
		}
	}
}

// A host that cannot be dialled is ParseURL's error, naming the host and the problem, in every URL form; net/url
// lets "]" and ":" through ("redis://]" gave Addr "]:6379", "redis://::" gave "[:]:6379"; found by FuzzParseURL).
func TestParseURLRejectsUnusableHosts(t *testing.T) {
	for u, mention := range map[string]string{
		"redis://]":                   `"]"`,
		"redis://::":                  "brackets",
		"redis://::1":                 "brackets",
		"rediss://a..b:1":             "empty label",
		"redis://h!st:1":              `'!'`,
		"redis://b%C3%BCcher.example": "punycode",
		"redis://" + strings.Repeat("a", 64) + ".example": "longer than 63",
		"redis-sentinel://s1,]/m":                         `"]"`,
		"redis-cluster://n1:7000,a:b:7001":                "brackets",
	} {
		_, err := conn.ParseURL(u)
		if !errors.Is(err, conn.ErrInvalidConfig) || !strings.Contains(err.Error(), mention) {
			t.Errorf("ParseURL(%q) err = %v; want ErrInvalidConfig mentioning %s", u, err, mention)
		}
	}
}

func TestParseURLAcceptsEveryDialableHostForm(t *testing.T) {
	for u, addr := range map[string]string{
		"redis://[::1]:7000":            "[::1]:7000",
		"redis://[fe80::1%25eth0]:7000": "[fe80::1%eth0]:7000",
		"redis://10.0.0.7":              "10.0.0.7:6379",
		"redis://redis_primary.svc.":    "redis_primary.svc.:6379",
		"redis://Cache-01:7000":         "Cache-01:7000",
	} {
		cfg, err := conn.ParseURL(u)
		if err != nil || cfg.Addr != addr {
			t.Errorf("ParseURL(%q) = Addr %q, %v; want %q", u, cfg.Addr, err, addr)
		}
	}
}

// A duration option in whole seconds whose product overflows a time.Duration is an error, not a wrapped-around
// value (read_timeout=18446744074 was once accepted as 290.448384ms; found while writing FuzzParseURL).
func TestParseURLRejectsWholeSecondsThatOverflow(t *testing.T) {
	for _, v := range []string{"18446744074", "9223372037", "-9223372037"} {
		cfg, err := conn.ParseURL("redis://h:1?read_timeout=" + v)
		if !errors.Is(err, conn.ErrInvalidConfig) {
			t.Errorf("read_timeout=%s gave %v, %v; want ErrInvalidConfig", v, cfg.ResponseTimeout, err)
		}
	}
	if cfg, err := conn.ParseURL("redis://h:1?read_timeout=9223372036"); err != nil || cfg.ResponseTimeout != 9223372036*time.Second {
		t.Errorf("the largest whole number of seconds: %v, %v", cfg.ResponseTimeout, err)
	}
}

func TestParseURLLimits(t *testing.T) {
	cfg, err := conn.ParseURL("redis://h:1?max_bulk_len=16MiB&max_line_len=65536&max_reply_len=1GiB&max_array_len=1000000")
	if err != nil {
		t.Fatal(err)
	}
	want := resp.Limits{MaxBulkLen: 16 << 20, MaxLineLen: 65536, MaxReplyLen: 1 << 30, MaxArrayLen: 1000000}
	if cfg.Limits != want {
		t.Fatalf("Limits = %+v; want %+v", cfg.Limits, want)
	}
	for _, bad := range []string{"max_bulk_len=0", "max_bulk_len=-1", "max_bulk_len=8MB", "max_line_len=x",
		"max_reply_len=9999999999GiB", "max_array_len=1KiB"} {
		if _, err := conn.ParseURL("redis://h:1?" + bad); !errors.Is(err, conn.ErrInvalidConfig) {
			t.Errorf("ParseURL(?%s) err = %v; want ErrInvalidConfig", bad, err)
		}
	}
}
