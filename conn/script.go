package conn

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"

	"github.com/locksmith-go/locksmith/resp"
)

// Script is a Lua script with its SHA-1 computed locally, so that running it sends only EVALSHA and the digest.
// When a server answers NOSCRIPT (it was restarted, failed over, or ran SCRIPT FLUSH), the connection sends SCRIPT
// LOAD followed by the same EVALSHA again, on the same connection and before any later command, invisibly to the
// caller. A Script is immutable and safe for concurrent use; create it once (a package-level variable) and reuse it.
type Script struct {
	src string
	sha string
	hdr []byte // "$7\r\nEVALSHA\r\n$40\r\n<sha>\r\n": the constant part of every EVALSHA, encoded once
}

// NewScript returns the Script for src. It computes the SHA-1 (40 lower-case hex digits, as Redis prints it) and
// does not block.
func NewScript(src string) *Script {
	sum := sha1.Sum([]byte(src))
	s := &Script{src: src, sha: hex.EncodeToString(sum[:])}
	s.hdr = resp.AppendBulkString(resp.AppendBulkString(nil, "EVALSHA"), s.sha)
	return s
}

// SHA returns the script's SHA-1 in lower-case hex, the name EVALSHA uses.
func (s *Script) SHA() string { return s.sha }

// Source returns the script's Lua source.
func (s *Script) Source() string { return s.src }

// maxScriptLoads bounds how many times one command is re-sent after NOSCRIPT. Once is enough unless another SCRIPT
// FLUSH lands between the SCRIPT LOAD and the resend; past this bound the NOSCRIPT error reaches the caller rather
// than looping.
const maxScriptLoads = 3

// appendCmd encodes one command: EVALSHA sha numkeys keys... args... for a script s, else args as they are. It
// runs under the connection's mutex, so it is kept short: the script's constant prefix is pre-encoded, and small
// lengths (every key, argument and count of a lock script) skip strconv (about 7% of the client's CPU at G=1024
// went to strconv.AppendInt in the encoder, under the mutex).
func appendCmd(dst []byte, s *Script, keys, args []string) []byte {
	if s == nil {
		return resp.AppendCommand(dst, args...)
	}
	dst = appendHeader(dst, '*', 3+len(keys)+len(args))
	dst = append(dst, s.hdr...)
	if n := len(keys); n < 10 {
		dst = append(dst, '$', '1', '\r', '\n', byte('0'+n), '\r', '\n')
	} else {
		dst = resp.AppendBulkInt(dst, int64(n))
	}
	for _, k := range keys {
		dst = appendBulk(dst, k)
	}
	for _, a := range args {
		dst = appendBulk(dst, a)
	}
	return dst
}

// appendHeader appends "<kind><n>\r\n", with a fast path for n < 100.
func appendHeader(dst []byte, kind byte, n int) []byte {
	switch {
	case n < 10:
		return append(dst, kind, byte('0'+n), '\r', '\n')
	case n < 100:
		return append(dst, kind, byte('0'+n/10), byte('0'+n%10), '\r', '\n')
	}
	if kind == '*' {
		return resp.AppendArrayLen(dst, n)
	}
	dst = append(dst, kind)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '\r', '\n')
}

// appendBulk appends s as a bulk string, like resp.AppendBulkString.
func appendBulk(dst []byte, s string) []byte {
	dst = appendHeader(dst, '$', len(s))
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// appendScriptLoad encodes SCRIPT LOAD src.
func appendScriptLoad(dst []byte, s *Script) []byte {
	dst = resp.AppendArrayLen(dst, 3)
	dst = resp.AppendBulkString(dst, "SCRIPT")
	dst = resp.AppendBulkString(dst, "LOAD")
	return resp.AppendBulkString(dst, s.src)
}
