package integration

import (
	"context"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// The minimal ACL of each object kind, as docs/acl.md documents it: each kind's scenario (acl_scenarios_test.go)
// runs through two clients of a user given exactly the documented rules, and the server must refuse nothing (ACL
// LOG stays empty; no pub/sub refusal reaches the Observer). The commands documented must be exactly what the
// kind's scripts call plus what the client sends itself, so that a script that starts calling a new command fails
// here until the documentation says so.

// aclDoc is the page the rules are read from.
const aclDoc = "../docs/acl.md"

// aclKindScripts are the scripts (rlock.Scripts names) each kind runs.
var aclKindScripts = map[string][]string{
	"Lock":          {"lock.acquire", "lock.release", "lock.leave", "lock.forceunlock", "lock.renew", "lock.status"},
	"FencedLock":    {"fencedlock.acquire", "lock.release", "lock.leave", "lock.forceunlock", "lock.renew"},
	"FairLock":      {"fairlock.acquire", "fairlock.release", "fairlock.leave", "fairlock.forceunlock", "lock.renew"},
	"ReadWriteLock": {"rwlock.readacquire", "rwlock.writeacquire", "rwlock.readrelease", "rwlock.writerelease", "rwlock.forceunlock", "rwlock.renew", "lock.forceunlock", "lock.status"},
	"Semaphore":     {"semaphore.acquire", "semaphore.release", "semaphore.trysetpermits", "semaphore.addpermits", "semaphore.drain"},
	"PermitExpirableSemaphore": {"permitsemaphore.acquire", "permitsemaphore.release", "permitsemaphore.updatelease",
		"permitsemaphore.available", "permitsemaphore.trysetpermits", "permitsemaphore.addpermits"},
	"CountDownLatch":     {"countdownlatch.trysetcount", "countdownlatch.countdown", "lock.forceunlock"},
	"RateLimiter":        {"ratelimiter.acquire", "ratelimiter.available", "ratelimiter.trysetrate", "ratelimiter.setrate"},
	"FixedWindowLimiter": {"ratelimiter.fixedwindow"},
}

// aclKindCommands are the commands each kind's client sends itself (measured with MONITOR while the scenarios ran),
// besides PING (the connection's handshake and health check), EVALSHA and SCRIPT LOAD, which every kind sends.
var aclKindCommands = map[string][]string{
	"Lock":                     {"subscribe", "unsubscribe", "exists", "hget", "pttl"},
	"FencedLock":               {"subscribe", "unsubscribe", "exists", "hget", "pttl", "get"},
	"FairLock":                 {"subscribe", "unsubscribe", "exists", "hget", "pttl", "llen"},
	"ReadWriteLock":            {"subscribe", "unsubscribe", "hget", "pttl"},
	"Semaphore":                {"subscribe", "unsubscribe", "get"},
	"PermitExpirableSemaphore": {"subscribe", "unsubscribe"},
	"CountDownLatch":           {"subscribe", "unsubscribe", "get"},
	"RateLimiter":              {"hgetall"},
	"FixedWindowLimiter":       {"get"},
}

// aclRules reads docs/acl.md: the rules of each "### <Kind>" section's acl code block, NAME standing for the name.
func aclRules(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(aclDoc)
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string][]string{}
	kind, inBlock := "", false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "### "):
			kind = strings.TrimSpace(strings.TrimPrefix(line, "### "))
		case strings.HasPrefix(line, "## "):
			kind = "" // a section's own blocks (Redis Cluster) are not a kind's
		case line == "```acl":
			inBlock = true
		case line == "```":
			inBlock = false
		case inBlock && kind != "":
			rules[kind] = append(rules[kind], strings.Fields(line)...)
		}
	}
	return rules
}

// scriptCommands returns the commands the named scripts call (redis.call, redis.pcall, and pub's PUBLISH).
func scriptCommands(t *testing.T, names []string) []string {
	t.Helper()
	called := regexp.MustCompile(`redis\.p?call\('([a-z]+)'`)
	var cmds []string
	for _, name := range names {
		s, ok := rlock.LookupScript(name)
		if !ok {
			t.Fatalf("no script %q", name)
		}
		for _, m := range called.FindAllStringSubmatch(s.Source, -1) {
			cmds = append(cmds, m[1])
		}
		if strings.Contains(s.Source, "pub(") {
			cmds = append(cmds, "publish")
		}
	}
	return cmds
}

func sortedSet(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return slices.Compact(s)
}

// Every command a kind's documented ACL allows is one its scripts or its client send, and every such command is
// documented.
func TestACLDocumentsExactlyTheCommandsEachKindSends(t *testing.T) {
	rules := aclRules(t)
	for kind, scripts := range aclKindScripts {
		want := append(scriptCommands(t, scripts), "ping", "evalsha", "script|load")
		want = sortedSet(append(want, aclKindCommands[kind]...))
		var got []string
		for _, r := range rules[kind] {
			if strings.HasPrefix(r, "+") {
				got = append(got, r[1:])
			}
		}
		if got = sortedSet(got); !slices.Equal(got, want) {
			t.Errorf("%s: %s documents the commands\n\t%v\nbut the kind sends\n\t%v", kind, aclDoc, got, want)
		}
	}
	for kind := range rules {
		if aclKindScripts[kind] == nil {
			t.Errorf("%s documents a kind %q no scenario runs", aclDoc, kind)
		}
	}
}

// Each kind's scenario runs through a user with exactly its documented rules, without a single refusal.
func TestACLEachKindRunsWithItsMinimalACL(t *testing.T) {
	srv := redistest.Start(t)
	rules := aclRules(t)
	ctx := context.Background()
	for kind := range aclScenarios {
		t.Run(kind, func(t *testing.T) {
			name := "app:" + kind // the rules cover it by a pattern, name*, as a family of names would be
			user := "u-" + kind
			if _, err := srv.Do(ctx, aclSetUser(t, user, rules[kind], name)...); err != nil {
				t.Fatalf("ACL SETUSER %s: %v", user, err)
			}
			runACLScenario(t, kind, name, conn.Config{Addr: srv.Addr(), Username: user, Password: "pw"}, srv)
		})
	}
}

// aclSetUser returns the ACL SETUSER command that makes user, with password "pw", from nothing with exactly
// rules, NAME standing for the pattern name*.
func aclSetUser(t *testing.T, user string, rules []string, name string) []string {
	t.Helper()
	if len(rules) == 0 {
		t.Fatalf("%s gives no rules for %s", aclDoc, user)
	}
	args := []string{"ACL", "SETUSER", user, "reset", "on", ">pw"}
	for _, r := range rules {
		args = append(args, strings.ReplaceAll(r, "NAME", name+"*"))
	}
	return args
}

// runACLScenario runs kind's scenario on name through two clients made with cc (whose user has the rules under
// test) and fails t if any of nodes refused them anything: an ACL LOG entry, a pub/sub refusal reported to the
// Observer, a message refused to a script.
func runACLScenario(t *testing.T, kind, name string, cc conn.Config, nodes ...*redistest.Server) {
	t.Helper()
	ctx := context.Background()
	for _, n := range nodes {
		if _, err := n.Do(ctx, "ACL", "LOG", "RESET"); err != nil {
			t.Fatal(err)
		}
	}
	var denied atomic.Int32
	obs := aclObserver{denied: &denied, renewals: make(chan struct{}, 1)}
	mk := func() *rlock.Client {
		c, err := rlock.NewClient(rlock.Config{WatchdogTimeout: aclWatchdog, Observer: obs, Conn: cc})
		if err != nil {
			t.Fatalf("NewClient as the %s user: %v", kind, err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := mk(), mk()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	renewed := func() {
		t.Helper()
		select {
		case <-obs.renewals: // one may be left from before: drain it and wait for the next
		default:
		}
		select {
		case <-obs.renewals:
		case <-sctx.Done():
			t.Fatal("no renewal while a lock was held")
		}
	}
	aclScenarios[kind](t, sctx, a, b, name, renewed)
	a.Close()
	b.Close()
	for _, n := range nodes {
		if log := aclLog(t, n); len(log) != 0 {
			t.Errorf("%s refused the %s user %d times; first: %v", n.Addr(), kind, len(log), log[0])
		}
	}
	if n := denied.Load(); n != 0 {
		t.Errorf("%d pub/sub refusals reported", n)
	}
	if s := a.Stats(); s.PublishesRefused != 0 {
		t.Errorf("%d messages refused", s.PublishesRefused)
	}
}

// aclLog returns srv's ACL LOG, each entry as its field/value map (reason, object, username...).
func aclLog(t *testing.T, srv *redistest.Server) []map[string]string {
	t.Helper()
	log, err := srv.Do(context.Background(), "ACL", "LOG")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]map[string]string, 0, len(log.Array))
	for _, e := range log.Array {
		m := map[string]string{}
		for i := 0; i+1 < len(e.Array); i += 2 {
			v := e.Array[i+1]
			m[e.Array[i].Str] = v.Str
			if v.Kind == redistest.KindInt {
				m[e.Array[i].Str] = strconv.FormatInt(v.Int, 10)
			}
		}
		out = append(out, m)
	}
	return out
}

// aclObserver counts pub/sub refusals and signals successful renewals.
type aclObserver struct {
	rlock.NopObserver
	denied   *atomic.Int32
	renewals chan struct{}
}

func (o aclObserver) PubSubDenied(rlock.PubSubDeniedEvent) { o.denied.Add(1) }

func (o aclObserver) RenewalBatch(e rlock.RenewalEvent) {
	if e.Err == nil && e.Renewed > 0 {
		select {
		case o.renewals <- struct{}{}:
		default:
		}
	}
}
