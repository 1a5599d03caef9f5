package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Lock names and owner ids come from the command line, from scripts and from Redis (a lock hash's fields), so
// they may hold anything: an escape sequence that clears the screen or recolours the rest of a log, a newline that
// forges a line ("rlock: acquired ..."), bytes that are not UTF-8. rlock shows them so that none of that happens
// and the exact value stays recoverable:
//
//   - human output quotes a name or owner id in Go syntax (strconv.Quote) when it holds a control character, a
//     character Unicode does not call printable (bidirectional overrides included) or invalid UTF-8; other names
//     are shown as they are, unquoted, as before;
//   - -json carries the string as JSON does (control characters escaped), and when it is not valid UTF-8 — which
//     JSON cannot carry, encoding/json replaces such bytes with U+FFFD — also its bytes in base64, in name_b64 or
//     owner_b64;
//   - every line rlock writes then passes through safeWriter, which escapes any control character left in text
//     rlock did not build itself (a server's error message, an error from the system).

// shown returns s as human output shows a name or owner id: as it is when it is valid UTF-8 made of printable
// characters, else quoted in Go syntax.
func shown(s string) string {
	if printable(s) {
		return s
	}
	return strconv.Quote(s)
}

// printable reports whether s is valid UTF-8 made of printable characters (unicode.IsPrint: letters, marks,
// numbers, punctuation, symbols and the ASCII space).
func printable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// base64IfInvalid returns s's bytes in standard base64 when s is not valid UTF-8 (the JSON string then has U+FFFD
// in place of the invalid bytes), else "".
func base64IfInvalid(s string) string {
	if utf8.ValidString(s) {
		return ""
	}
	return base64.StdEncoding.EncodeToString([]byte(s))
}

// safeWriter is the writer of rlock's own output (never the command's): it removes the URL's secrets
// (redactor) and escapes control characters other than newline and tab, and invalid UTF-8, as \xNN or \uNNNN.
// Each Write is one line or a few: a secret is never split across two of them. Safe for concurrent use when w
// is (an *os.File is).
type safeWriter struct {
	w   io.Writer
	red *redactor
}

// Write writes p redacted and escaped. It reports len(p) when the underlying write succeeds, as callers count
// their own bytes.
func (s *safeWriter) Write(p []byte) (int, error) {
	out := escapeControls(s.red.redact(string(p)))
	if _, err := io.WriteString(s.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// escapeControls escapes the control characters of s other than '\n' and '\t', the other non-printable
// characters (format characters such as bidirectional overrides), and invalid UTF-8 bytes.
func escapeControls(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || (!unicode.IsPrint(r) && r != '\n' && r != '\t') {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n', r == '\t', unicode.IsPrint(r):
			b.WriteString(s[i : i+n])
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

// shellQuote returns s as a word to paste into a POSIX shell command that rlock suggests ("rlock unlock -owner ID
// NAME"): as it is when it is made of characters no shell treats specially, in single quotes otherwise, and quoted
// in Go syntax (not a shell word, but safe to show) when it holds non-printable characters.
func shellQuote(s string) string {
	if !printable(s) {
		return shown(s)
	}
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			strings.ContainsRune("_-.,:/@%+=", r)))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
