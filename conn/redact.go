package conn

import (
	"fmt"
	"log/slog"
	"strings"
)

// redacted replaces a secret in every message, log line and printed Config.
const redacted = "xxxxx"

// RedactURL returns rawURL with its password, and the value of every query option whose name holds "password"
// (sentinel_password), replaced by xxxxx: redis://user:xxxxx@host:6379/0. It accepts any string, including one
// ParseURL rejects, and errs on the side of hiding: the user info is taken to end at the last '@' of the string
// (an unescaped '/', '?' or '#' in a password leaves net/url nothing reliable to go by), so an '@' in a query
// value hides the host too. Every error of ParseURL quotes URLs in this form only. It does not block and is safe
// for concurrent use.
func RedactURL(rawURL string) string {
	prefix, rest, ok := strings.Cut(rawURL, "://")
	if ok {
		prefix += "://"
	} else {
		prefix, rest = "", rawURL
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		userinfo := rest[:at]
		switch user, _, hasPassword := strings.Cut(userinfo, ":"); {
		case hasPassword:
			userinfo = user + ":" + redacted
		case strings.ContainsAny(userinfo, "/?#"):
			userinfo = redacted // not a plain user name: it may hold anything
		}
		rest = userinfo + rest[at:]
	}
	return prefix + redactPasswordOptions(rest)
}

// redactPasswordOptions replaces the value of every name=value pair whose name holds "password" (in any case).
func redactPasswordOptions(s string) string {
	lower := strings.ToLower(s)
	var sb strings.Builder
	last := 0
	for i := 0; ; {
		j := strings.Index(lower[i:], "password=")
		if j < 0 {
			break
		}
		start := i + j + len("password=")
		end := start + strings.IndexAny(s[start:]+"&", "&#")
		sb.WriteString(s[last:start])
		sb.WriteString(redacted)
		last, i = end, end
	}
	if last == 0 {
		return s
	}
	sb.WriteString(s[last:])
	return sb.String()
}

// String describes the Config for messages and logs with its passwords (Password, SentinelPassword) replaced by
// xxxxx; fmt's %v, %+v and %s use it, and slog uses LogValue. It does not block.
func (c Config) String() string {
	c.Password, c.SentinelPassword = redactIfSet(c.Password), redactIfSet(c.SentinelPassword)
	type plain Config // no methods: formats the fields, without recursing into String
	return fmt.Sprintf("%+v", plain(c))
}

// GoString is String for %#v, so that no format verb prints a password.
func (c Config) GoString() string { return "conn.Config" + c.String() }

// LogValue logs the Config as String does, passwords replaced by xxxxx.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// redactIfSet returns xxxxx for a non-empty secret, "" for an empty one (so that "no password" stays visible).
func redactIfSet(s string) string {
	if s == "" {
		return ""
	}
	return redacted
}
