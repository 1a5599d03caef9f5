package conn

import (
	"crypto/sha1"
	"encoding/hex"

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

// appendCmd encodes one command: EVALSHA sha numkeys keys... args... for a script s, else args as they are.
func appendCmd(dst []byte, s *Script, keys, args []string) []byte {
	if s == nil {
		return resp.AppendCommand(dst, args...)
	}
	dst = resp.AppendArrayLen(dst, 3+len(keys)+len(args))
	dst = append(dst, s.hdr...)
	dst = resp.AppendBulkInt(dst, int64(len(keys)))
	for _, k := range keys {
		dst = resp.AppendBulkString(dst, k)
	}
	for _, a := range args {
		dst = resp.AppendBulkString(dst, a)
	}
	return dst
}

// appendScriptLoad encodes SCRIPT LOAD src.
func appendScriptLoad(dst []byte, s *Script) []byte {
	dst = resp.AppendArrayLen(dst, 3)
	dst = resp.AppendBulkString(dst, "SCRIPT")
	dst = resp.AppendBulkString(dst, "LOAD")
	return resp.AppendBulkString(dst, s.src)
}
