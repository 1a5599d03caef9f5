package conn_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/conn"
)

// No form of URL, however malformed, makes ParseURL put the password (or a piece of it) in its error: net/url's
// own messages quote the URL or the bytes around the fault, and a password holding an unescaped '/', '?' or '#'
// parses as a port, a path or a query.
func TestParseURLErrorsNeverHoldThePassword(t *testing.T) {
	for _, raw := range []string{
		"redis://u:S3cr3t%@127.0.0.1:6379",                          // bad escape at the end of the password
		"redis://u:S3cr3t%zz@127.0.0.1",                             // bad escape inside it
		"redis://u:S3cr3t#x@h",                                      // '#' would start a fragment
		"redis://u:1234#S3cr3t@h",                                   // ... and make "1234" a valid port
		"redis://u:S3cr3t?x@h",                                      // '?' would start the query
		"redis://u:S3cr3t/x@h",                                      // '/' would start the path
		"redis://u:1234/S3cr3t@h",                                   // ... with a valid port before it
		"redis://u:S3cr3t@h:99999",                                  // invalid port
		"redis://u:S3cr3t@h:port",                                   // port not a number
		"redis://u:S3cr3t@h/notadb",                                 // bad database
		"redis://u:S3cr3t@h?pool_size=x",                            // bad option value
		"redis://u:S3cr3t@h?bogus=1",                                // unknown option
		"redis://u:S3cr3t@h,h2",                                     // two hosts in redis://
		"redis://u:S3cr3t@[::1",                                     // unclosed IPv6 bracket
		"redis://u:S3cr3t\x7f@h",                                    // control character
		"redis://u:S3cr3t@h#frag",                                   // fragment
		"redis://u:S3cr%3Ft@h?x=%zz",                                // escaped password, bad query escape
		"rediss://u:S3cr3t%@h:6380",                                 // TLS scheme
		"redis-sentinel://u:S3cr3t%@s1:26379/m",                     // Sentinel, bad escape
		"rediss-sentinel://u:S3cr3t/x@s1/m",                         // Sentinel over TLS, '/' in password
		"redis-sentinel://s1:26379/m?sentinel_password=S3cr3t&db=x", // Sentinel password option, bad db
		"redis-sentinel://s1/m?sentinel_password=S3cr3t&sentinel_password=S3cr3t",
		"redis-sentinel://u:S3cr3t@s1:0/m",             // Sentinel, port 0
		"redis-cluster://u:S3cr3t@n1:7000,n2:notaport", // cluster, bad port
		"rediss-cluster://u:S3cr3t?@n1:7000",           // cluster over TLS, '?' in password
		"redis-cluster://u:S3cr3t@n1/0",                // cluster with a path
		"http://u:S3cr3t@h",                            // wrong scheme
		"u:S3cr3t@h:6379",                              // no scheme
		"redis:u:S3cr3t@h",                             // opaque
		"re dis://u:S3cr3t@h",                          // scheme with a space
	} {
		_, err := conn.ParseURL(raw)
		if err == nil {
			t.Errorf("ParseURL(%q) succeeded", raw)
			continue
		}
		if !errors.Is(err, conn.ErrInvalidConfig) {
			t.Errorf("ParseURL(%q) = %v; want ErrInvalidConfig", raw, err)
		}
		for _, piece := range []string{"S3cr", "cr3t", "cr%3F", "cr?t"} {
			if strings.Contains(err.Error(), piece) {
				t.Errorf("ParseURL(%q) error holds %q: %s", raw, piece, err)
			}
		}
	}
}

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"redis://alice:s3cret@db:6379/2", "redis://alice:xxxxx@db:6379/2"},
		{"redis://:s3cret@db", "redis://:xxxxx@db"},
		{"redis://alice@db", "redis://alice@db"},
		{"redis://db:6379", "redis://db:6379"},
		{"rediss://u:p/a?s#s@db:6380?pool_size=2", "rediss://u:xxxxx@db:6380?pool_size=2"},
		{"redis-sentinel://s1,s2/m?sentinel_password=pw&db=1", "redis-sentinel://s1,s2/m?sentinel_password=xxxxx&db=1"},
		{"redis-sentinel://s1/m?SENTINEL_PASSWORD=pw", "redis-sentinel://s1/m?SENTINEL_PASSWORD=xxxxx"},
		{"u:pw@h", "u:xxxxx@h"},
	} {
		if got := conn.RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// A Config printed with any verb, or logged, shows that a password is set but not the password.
func TestConfigNeverPrintsItsPasswords(t *testing.T) {
	cfg := conn.Config{Addr: "h:1", Username: "u", Password: "S3cr3t", SentinelPassword: "S3ntinel"}
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "cfg", cfg)
	//lint:ignore S1025 each formatting verb is what is tested, %s included
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%s", cfg),
		fmt.Sprintf("%v", &cfg), logged.String()} {
		if strings.Contains(s, "S3cr3t") || strings.Contains(s, "S3ntinel") || !strings.Contains(s, "xxxxx") ||
			!strings.Contains(s, "h:1") {
			t.Errorf("printed Config = %s; want the address, and xxxxx for the passwords", s)
		}
	}
}
