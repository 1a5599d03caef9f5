//go:build unix

package main

import (
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// secretMarker starts every password of TestNoOutputCarriesThePassword: the test fails if it appears anywhere in
// rlock's output, so that even a fragment of a password cut by a URL parser (the characters before an unescaped
// '#', say) is caught.
const secretMarker = "S3cr"

// rlock's output never carries the password of the Redis URL, whatever is wrong with the URL or the server, in
// human output and in -json, for every scheme.
func TestNoOutputCarriesThePassword(t *testing.T) {
	closed := closedPort(t)
	_, port, _ := net.SplitHostPort(closed)
	noPass := redistest.Start(t)
	withPass := redistest.Start(t, redistest.WithPassword("right-password"))
	hp := "127.0.0.1:" + port
	for _, tc := range []struct {
		name string
		url  string
		args []string // default: status job
	}{
		{"bad escape at the end", "redis://u:" + secretMarker + "3t%@" + hp, nil},
		{"bad escape hex", "redis://:" + secretMarker + "%zz@" + hp, nil},
		{"escaped hash", "redis://u:" + secretMarker + "%23et@" + hp, nil},
		{"raw hash", "redis://u:" + secretMarker + "#et@" + hp, nil},
		{"raw question mark", "redis://u:" + secretMarker + "?et@" + hp, nil},
		{"raw slash", "redis://u:" + secretMarker + "/et@" + hp, nil},
		{"raw at", "redis://u:" + secretMarker + "@et@" + hp, nil},
		{"raw percent and digits", "redis://u:" + secretMarker + "%4@" + hp, nil},
		{"escapes decoded", "redis://u:" + secretMarker + "%41t%20x@" + hp, nil},
		{"port out of range", "redis://u:" + secretMarker + "3t@127.0.0.1:99999", nil},
		{"port not a number", "redis://u:" + secretMarker + "3t@127.0.0.1:abc", nil},
		{"bad IPv6 host", "redis://u:" + secretMarker + "3t@[::1:" + port, nil},
		{"bad database", "redis://u:" + secretMarker + "3t@" + hp + "/notadb", nil},
		{"unknown option", "redis://u:" + secretMarker + "3t@" + hp + "?bogus=1", nil},
		{"bad scheme", "http://u:" + secretMarker + "3t@" + hp, nil},
		{"tls bad escape", "rediss://u:" + secretMarker + "3t%@" + hp, nil},
		{"tls refused", "rediss://u:" + secretMarker + "3t@" + hp, nil},
		{"sentinel bad escape", "redis-sentinel://u:" + secretMarker + "3t%@" + hp + "/mymaster", nil},
		{"sentinel password option", "redis-sentinel://u:" + secretMarker + "3t@" + hp + "/m?sentinel_password=" + secretMarker + "%", nil},
		{"tls sentinel bad port", "rediss-sentinel://u:" + secretMarker + "3t@127.0.0.1:0/m", nil},
		{"cluster bad escape", "redis-cluster://u:" + secretMarker + "3t%@" + hp, nil},
		{"cluster raw question mark", "redis-cluster://u:" + secretMarker + "?3t@" + hp + "," + hp, nil},
		{"tls cluster unknown option", "rediss-cluster://u:" + secretMarker + "3t@" + hp + "?bogus=1", nil},
		{"refused, exec", "redis://u:" + secretMarker + "3t@" + hp, []string{"exec", "job", "--", "true"}},
		{"auth without a server password", "redis://:" + secretMarker + "3t@" + noPass.Addr(), nil},
		{"wrong password", "redis://:" + secretMarker + "3t@" + withPass.Addr(), []string{"lock", "-hold", "1s", "job"}},
		{"wrong password, force-unlock", "redis://:" + secretMarker + "3t%40@" + withPass.Addr(), []string{"force-unlock", "job"}},
		{"help shows the default", "redis://u:" + secretMarker + "3t%@" + hp, []string{"exec", "-h"}},
	} {
		args := tc.args
		if args == nil {
			args = []string{"status", "job"}
		}
		for _, mode := range []string{"human", "json", "env"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				h := newHarness(t)
				h.dialFn = dialRlock // the real client, so that its errors are the real ones
				all := args
				switch mode {
				case "json":
					all = append([]string{"-json", "-addr", tc.url}, args...)
				case "human":
					all = append([]string{"-addr", tc.url}, args...)
				case "env":
					h.env.getenv = func(k string) string {
						if k == "REDIS_URL" {
							return tc.url
						}
						return ""
					}
				}
				code, out, errs := h.runSync(t, all...)
				text := joined(out) + "\n" + joined(errs)
				if strings.Contains(text, secretMarker) {
					t.Fatalf("exit %d; the password shows in the output:\n%s", code, text)
				}
				if code == 0 && !slices.Contains(args, "-h") {
					t.Fatalf("exit 0 with a URL that cannot work:\n%s", text)
				}
			})
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"redis://:pw@h:1":                       "redis://:xxxxx@h:1",
		"redis://u:p/w#x?y@h:1/2?client_name=a": "redis://u:xxxxx@h:1/2?client_name=a",
		"redis://u@h:1":                         "redis://u@h:1",
		"redis://h:1":                           "redis://h:1",
		"redis-sentinel://h:1/m?sentinel_password=abc&db=1": "redis-sentinel://h:1/m?sentinel_password=xxxxx&db=1",
		"not a url": "not a url",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// A password that conn would cut at an unescaped '#' or '?' is refused before anything is dialled: the host
// would be made of its first characters.
func TestURLWithAnUnescapedHashInThePasswordIsAUsageError(t *testing.T) {
	h := newHarness(t)
	code, _, errs := h.runSync(t, "-addr", "redis://u:12#ab@127.0.0.1:6379", "status", "job")
	if code != exitUsage || !strings.Contains(joined(errs), "percent-encode") || h.dialCount() != 0 {
		t.Fatalf("exit %d, %d dials, stderr:\n%s", code, h.dialCount(), joined(errs))
	}
	if strings.Contains(joined(errs), "12#ab") {
		t.Fatalf("the password shows: %s", joined(errs))
	}
}
