package main

import (
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/locksmith-go/locksmith/conn"
)

// redactedSecret replaces a password wherever rlock shows a URL: redis://user:xxxxx@host.
const redactedSecret = "xxxxx"

// minSecretLen is the shortest password that is also searched for, and replaced, in free text. Replacing every
// "ab" of a message would garble it and hide nothing (two characters are guessed at once); messages built from
// the URL never carry the password anyway, since they show the URL through redactURL.
const minSecretLen = 3

// redactor removes the credentials of the Redis URL from rlock's output: every line rlock writes, human or -json,
// passes through it (see safeWriter), whatever produced the text — a message of ours, an error of conn, a server
// reply. It knows the URL's password in every form a message may carry it: as typed (percent-escapes included),
// decoded, and as conn parsed it, and the sentinel_password option likewise. Safe for concurrent use.
type redactor struct {
	mu      sync.Mutex // guards secrets
	secrets []string
}

// addURL registers the secrets of a Redis URL as given to -addr or REDIS_URL.
func (r *redactor) addURL(raw string) {
	var found []string
	add := func(s string) {
		if s != "" {
			found = append(found, s)
			if d, err := url.PathUnescape(s); err == nil && d != s {
				found = append(found, d)
			}
			if d, err := url.QueryUnescape(s); err == nil && d != s {
				found = append(found, d)
			}
		}
	}
	if p, ok := splitURL(raw); ok {
		add(p.password)
		add(p.sentinelPassword)
	}
	if cfg, err := conn.ParseURL(raw); err == nil {
		add(cfg.Password)
		add(cfg.SentinelPassword)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range found {
		if len(s) >= minSecretLen && !slices.Contains(r.secrets, s) {
			r.secrets = append(r.secrets, s)
		}
	}
	// Longest first, so that a password that contains another one's text is replaced whole.
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
}

// redact returns s with every registered secret replaced by xxxxx.
func (r *redactor) redact(s string) string {
	if r == nil {
		return s
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.secrets {
		s = strings.ReplaceAll(s, v, redactedSecret)
	}
	return s
}

// urlParts is a Redis URL cut where its secrets are, without net/url's rules (see splitURL).
type urlParts struct {
	prefix           string // "redis://user:" (or "redis://" when there is no password)
	password         string // as typed; "" when there is none
	rest             string // "@host:port/..." after the password (or everything after the scheme)
	sentinelPassword string // the sentinel_password option's value as typed, "" when absent
}

// splitURL cuts a Redis URL at its password more generously than net/url: the user info is everything between
// "://" and the last '@', so that a password holding an unescaped '/', '?', '#' or '@' (which net/url, and so
// conn, would read as the end of the host, a path, a query or a fragment) is still recognised — and redacted —
// whole. ok is false when raw has no scheme separator.
func splitURL(raw string) (urlParts, bool) {
	i := strings.Index(raw, "://")
	if i < 0 {
		return urlParts{}, false
	}
	p := urlParts{prefix: raw[:i+3], rest: raw[i+3:]}
	if at := strings.LastIndexByte(p.rest, '@'); at >= 0 {
		if user, pass, ok := strings.Cut(p.rest[:at], ":"); ok {
			p.prefix += user + ":"
			p.password = pass
			p.rest = p.rest[at:]
		}
	}
	if _, query, ok := strings.Cut(p.rest, "?"); ok {
		for _, kv := range strings.Split(query, "&") {
			if k, v, _ := strings.Cut(kv, "="); k == "sentinel_password" {
				p.sentinelPassword = v
			}
		}
	}
	return p, true
}

// redactURL returns raw with its password and sentinel_password replaced by xxxxx: redis://user:xxxxx@host. A
// string without "://" is returned as is (the redactor still replaces any registered secret in it).
func redactURL(raw string) string {
	p, ok := splitURL(raw)
	if !ok {
		return raw
	}
	out := p.prefix
	if p.password != "" {
		out += redactedSecret
	}
	rest := p.rest
	if p.sentinelPassword != "" {
		rest = strings.Replace(rest, "sentinel_password="+p.sentinelPassword, "sentinel_password="+redactedSecret, 1)
	}
	return out + rest
}

// checkURLPassword reports a URL whose password conn would not read as typed: a password holding an unescaped
// '/', '?' or '#' makes net/url end the host early, so conn would dial a host made of the password's first
// characters (and print them in its errors). The message shows the URL redacted.
func checkURLPassword(raw string, cfg conn.Config) (msg string, ok bool) {
	p, found := splitURL(raw)
	if !found || p.password == "" {
		return "", true
	}
	if cfg.Password != "" {
		return "", true
	}
	return "the password in " + redactURL(raw) + " holds a character that ends the host part of a URL: " +
		"percent-encode / ? # @ and % in passwords (%2F %3F %23 %40 %25)", false
}
