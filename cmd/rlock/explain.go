package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/rlock"
)

// failure is an outcome that ends rlock: the exit code and a message for stderr that says what happened and what
// to do about it.
type failure struct {
	code int
	msg  string
}

// describe turns an error from the lock library or the transport into a failure. addr is the server's host:port
// and name the lock's name, for the message.
func describe(err error, addr, name string) failure {
	var (
		argErr  *rlock.ArgumentError
		srvErr  *resp.ServerError
		connErr *conn.ConnError
		notLock *notLockError
	)
	switch {
	case errors.As(err, &connErr) && errors.Is(err, conn.ErrInvalidConfig):
		// The server refused the connection's configuration (TLS against a plain server or the reverse, a
		// certificate, the database): conn's message says which and what to change.
		return failure{exitUnavailable, fmt.Sprintf("Redis refused the connection: %v", connErr.Err)}
	case errors.Is(err, conn.ErrInvalidConfig):
		return failure{exitUsage, fmt.Sprintf("invalid -addr (or REDIS_URL): %v; use redis://[user:password@]host:port[/db] "+
			"or rediss://... for TLS", err)}
	case errors.As(err, &argErr):
		return failure{exitUsage, err.Error()}
	case errors.As(err, &notLock):
		return failure{exitSoftware, notLock.Error()}
	case errors.As(err, &srvErr):
		return describeServerError(srvErr, addr, name)
	case errors.Is(err, conn.ErrAuth):
		// A refusal of the credentials that carries no server reply of its own (conn's sentinel): exit 69 all the
		// same, saying what to check.
		return failure{exitUnavailable, fmt.Sprintf("Redis at %s refused the credentials: %v; check the user and "+
			"password in -addr (or REDIS_URL) and the user's ACL", addr, err)}
	case errors.As(err, &connErr):
		return describeConnError(connErr, addr)
	case errors.Is(err, rlock.ErrClosed), errors.Is(err, conn.ErrClosed):
		return failure{exitSoftware, fmt.Sprintf("internal error: the client was closed while in use: %v", err)}
	}
	return failure{exitSoftware, fmt.Sprintf("unexpected error: %v", err)}
}

// describeInvalidAddr explains a URL that conn refused. conn's message quotes the URL, or the part of it that it
// could not parse, which may be the password: when the URL has one, the message is conn's verdict on the same
// URL with the password replaced by xxxxx, or, when that one parses, a word on escaping passwords.
func describeInvalidAddr(raw string, err error) failure {
	const forms = "; use redis://[user:password@]host:port[/db] or rediss://... for TLS"
	p, ok := splitURL(raw)
	if !ok || (p.password == "" && p.sentinelPassword == "") {
		return failure{exitUsage, fmt.Sprintf("invalid -addr (or REDIS_URL): %v%s", err, forms)}
	}
	shownURL := redactURL(raw)
	if _, err := conn.ParseURL(shownURL); err != nil {
		return failure{exitUsage, fmt.Sprintf("invalid -addr (or REDIS_URL): %v%s", err, forms)}
	}
	return failure{exitUsage, fmt.Sprintf("invalid -addr (or REDIS_URL) %s: the password is not valid in a URL: "+
		"percent-encode %% / ? # @ in passwords (%%25 %%2F %%3F %%23 %%40)", shownURL)}
}

// describeServerError explains an error reply from Redis.
func describeServerError(e *resp.ServerError, addr, name string) failure {
	switch e.Prefix {
	case "NOAUTH":
		return failure{exitUnavailable, fmt.Sprintf("Redis at %s requires a password (NOAUTH): pass it in the URL, "+
			"-addr redis://:PASSWORD@%s (redis://USER:PASSWORD@... for an ACL user), or set REDIS_URL", addr, addr)}
	case "WRONGPASS":
		return failure{exitUnavailable, fmt.Sprintf("Redis at %s refused the user name or password (WRONGPASS): check the "+
			"credentials in the URL, redis://[USER]:PASSWORD@%s", addr, addr)}
	case "NOPERM":
		return noPermission(e.Message, name)
	case "ERR":
		if strings.Contains(e.Message, "The user executing the script can't") {
			return noPermission(e.Message, name) // a command or channel a lock script uses is not allowed
		}
		if authWithoutServerPassword(e.Message) {
			return failure{exitUnavailable, fmt.Sprintf("Redis at %s has no password set, and refused the one in the URL "+
				"(AUTH without a configured password): remove the password from -addr (redis://%s), or set requirepass "+
				"or an ACL user on the server", addr, addr)}
		}
	case "READONLY":
		return failure{exitUnavailable, fmt.Sprintf("%s is a read-only replica (READONLY): point -addr at the master", addr)}
	case "LOADING":
		return failure{exitUnavailable, fmt.Sprintf("Redis at %s is loading its data set (LOADING): retry in a moment", addr)}
	case "MASTERDOWN":
		return failure{exitUnavailable, fmt.Sprintf("Redis at %s has lost its master (MASTERDOWN): retry after the failover", addr)}
	case "WRONGTYPE":
		return failure{exitSoftware, fmt.Sprintf("the key %q exists and is not a lock (WRONGTYPE): another program uses "+
			"this name; choose another lock name", name)}
	}
	return failure{exitSoftware, fmt.Sprintf("Redis at %s answered with an error: %s", addr, e.Message)}
}

// noPermission explains a refusal by the server's ACL, with the rules that fix it.
func noPermission(msg, name string) failure {
	return failure{exitUnavailable, fmt.Sprintf("the Redis user may not do what rlock needs (%s): grant it, with ACL "+
		"SETUSER, %s (the minimal ACL for this lock; see rlock's README)", msg, strings.Join(aclRules(name), " "))}
}

// authWithoutServerPassword reports an AUTH refused because the server has no password to check it against:
// "ERR AUTH <password> called without any password configured for the default user" (Redis 6 and later), "ERR
// Client sent AUTH, but no password is set" (earlier versions).
func authWithoutServerPassword(msg string) bool {
	return strings.Contains(msg, "AUTH") &&
		(strings.Contains(msg, "without any password configured") || strings.Contains(msg, "no password is set"))
}

// describeConnError explains a transport failure: the server could not be reached, or the connection broke.
func describeConnError(e *conn.ConnError, addr string) failure {
	if e.Addr != "" {
		addr = e.Addr
	}
	var (
		dnsErr  *net.DNSError
		certErr *tls.CertificateVerificationError
		unkAuth x509.UnknownAuthorityError
		hostErr x509.HostnameError
		recErr  tls.RecordHeaderError
	)
	const where = "Set the address with -addr or REDIS_URL (default " + defaultAddr + ")"
	switch {
	case errors.Is(e, syscall.ECONNREFUSED):
		return failure{exitUnavailable, fmt.Sprintf("cannot connect to Redis at %s: connection refused. Is redis-server "+
			"running there? %s", addr, where)}
	case errors.As(e, &dnsErr):
		return failure{exitUnavailable, fmt.Sprintf("cannot resolve the Redis host in %s: %v; %s", addr, dnsErr, where)}
	case errors.As(e, &recErr):
		return failure{exitUnavailable, fmt.Sprintf("Redis at %s does not speak TLS: use redis:// instead of rediss://", addr)}
	case errors.As(e, &certErr), errors.As(e, &unkAuth), errors.As(e, &hostErr):
		return failure{exitUnavailable, fmt.Sprintf("the TLS certificate of %s was not accepted: %v. rediss:// verifies the "+
			"server against the system's CA roots and the URL's host name: install the CA, or use the host name the "+
			"certificate names", addr, e.Err)}
	case errors.Is(e, conn.ErrTimeout):
		return failure{exitUnavailable, fmt.Sprintf("Redis at %s did not answer within the response timeout (URL option "+
			"read_timeout, default %s): is it overloaded or stopped?", addr, conn.DefaultResponseTimeout)}
	case errors.Is(e, context.DeadlineExceeded), isTimeout(e):
		return failure{exitUnavailable, fmt.Sprintf("no answer from Redis at %s within the dial timeout (URL option "+
			"dial_timeout, default %s): check the host and port and any firewall, and whether the server expects TLS "+
			"(rediss://) or plain connections (redis://)", addr, conn.DefaultDialTimeout)}
	case errors.Is(e, conn.ErrConnLost):
		return failure{exitUnavailable, fmt.Sprintf("lost the connection to Redis at %s: %v", addr, e.Err)}
	}
	return failure{exitUnavailable, fmt.Sprintf("Redis at %s is unavailable: %v", addr, e.Err)}
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
