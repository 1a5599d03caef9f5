//go:build unix

package main

import (
	"encoding/base64"
	"strconv"
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// hostileNames are lock names (and owner ids) that would drive a terminal or forge a log line if printed raw.
var hostileNames = []string{
	"evil\x1b[2J",         // clears the screen
	"two\nrlock: forged",  // a second, forged line
	"bad\xff\xfeutf8",     // not UTF-8
	"rtl\u202egnp.exe",    // a bidirectional override
	"bell\a and \r cr",    // a bell and a carriage return
	"csi\u009b31m colour", // the one-byte CSI of C1 controls
}

// checkNoRawControls fails if a line of human output holds a control character: the terminal would act on it.
func checkNoRawControls(t *testing.T, lines []string) {
	t.Helper()
	for _, l := range lines {
		if escapeControls(l) != l || strings.ContainsAny(l, "\x1b\r\a\u202e\u009b") {
			t.Fatalf("raw control character in a line of output: %q", l)
		}
	}
}

func TestHostileNamesAreQuotedForPeople(t *testing.T) {
	for _, name := range hostileNames {
		t.Run(strconv.Quote(name), func(t *testing.T) {
			h := newHarness(t)
			owner := "owner-" + name + ":1"
			h.fake.hold(name, owner)
			code, out, errs := h.runSync(t, "exec", "-wait", "0", name, "--", "true")
			if code != exitNotAcquired || len(out) != 0 {
				t.Fatalf("exit %d, stdout %q", code, out)
			}
			if len(errs) != 1 {
				t.Fatalf("%d lines for one message (a name forged a line?): %q", len(errs), errs)
			}
			checkNoRawControls(t, errs)
			for _, want := range []string{strconv.Quote(name), strconv.Quote(owner)} {
				if !strings.Contains(errs[0], want) {
					t.Fatalf("message %q does not show %s", errs[0], want)
				}
			}

			h = newHarness(t)
			h.fake.hold(name, owner)
			code, out, _ = h.runSync(t, "status", name)
			if code != exitOK || len(out) != 2 || !strings.HasPrefix(out[0], strconv.Quote(name)+": locked") ||
				!strings.Contains(out[1], strconv.Quote(owner)) {
				t.Fatalf("status: exit %d, output %q", code, out)
			}
			checkNoRawControls(t, out)
		})
	}
}

// Plain names are shown as they are, unquoted.
func TestPrintableNamesAreNotQuoted(t *testing.T) {
	h := newHarness(t)
	h.fake.hold("déploiement prod", "o:1")
	code, out, _ := h.runSync(t, "status", "déploiement prod")
	if code != exitOK || !strings.HasPrefix(out[0], "déploiement prod: locked") {
		t.Fatalf("exit %d, output %q", code, out)
	}
}

// -json keeps the exact bytes: JSON escapes control characters, and a name that is not UTF-8 (which JSON strings
// cannot carry) comes with its bytes in base64.
func TestJSONKeepsHostileNamesRecoverable(t *testing.T) {
	for _, name := range hostileNames {
		t.Run(strconv.Quote(name), func(t *testing.T) {
			h := newHarness(t)
			owner := "owner-" + name + ":1"
			h.fake.hold(name, owner)
			code, out, _ := h.runSync(t, "-json", "status", name)
			if code != exitOK || len(out) != 1 {
				t.Fatalf("exit %d, output %q", code, out)
			}
			ev := parseEvent(t, out[0])
			if got := recoveredString(t, ev, "name"); got != name {
				t.Fatalf("name recovered as %q, want %q (event %s)", got, name, out[0])
			}
			owners, _ := ev["owners"].([]any)
			if len(owners) != 1 {
				t.Fatalf("owners %v", ev["owners"])
			}
			if got := recoveredString(t, owners[0].(map[string]any), "owner"); got != owner {
				t.Fatalf("owner recovered as %q, want %q (event %s)", got, owner, out[0])
			}
		})
	}
}

// recoveredString returns the exact string of field k of a JSON object: from k_b64 when present, else k.
func recoveredString(t *testing.T, obj map[string]any, k string) string {
	t.Helper()
	if b64, ok := obj[k+"_b64"].(string); ok {
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			t.Fatalf("%s_b64 %q: %v", k, b64, err)
		}
		return string(b)
	}
	s, _ := obj[k].(string)
	return s
}

// The same through the binary and a real server: the name travels to Redis and back in a lock hash.
func TestE2EHostileNameInStatusAndExec(t *testing.T) {
	srv := redistest.Start(t)
	name := "job\x1b[31m\xff\nrlock: forged"
	code, out, errs := runRlock(t, srv, "lock", "-hold", "10s", name)
	if code != 0 || len(out) != 1 {
		t.Fatalf("lock: exit %d %q %q", code, out, errs)
	}
	code, out, _ = runRlock(t, srv, "status", name)
	if code != 0 || len(out) != 2 || !strings.HasPrefix(out[0], strconv.Quote(name)+": locked") {
		t.Fatalf("status: exit %d %q", code, out)
	}
	checkNoRawControls(t, out)
	code, out, _ = runRlock(t, srv, "-json", "status", name)
	if code != 0 || len(out) != 1 || recoveredString(t, parseEvent(t, out[0]), "name") != name {
		t.Fatalf("status -json: exit %d %q", code, out)
	}
	code, _, errs = runRlock(t, srv, "exec", "-wait", "0", name, "--", "true")
	if code != exitNotAcquired || len(errs) != 1 || !strings.Contains(errs[0], strconv.Quote(name)) {
		t.Fatalf("exec: exit %d %q", code, errs)
	}
	checkNoRawControls(t, errs)
}

func TestEscapeControls(t *testing.T) {
	for in, want := range map[string]string{
		"plain text\twith tab\n": "plain text\twith tab\n",
		"esc\x1b[2J":             `esc\x1b[2J`,
		"bad\xffbyte":            `bad\xffbyte`,
		"rtl\u202e":              `rtl\u202e`,
		"del\x7f":                `del\x7f`,
		"ünïcödé ok":             "ünïcödé ok",
	} {
		if got := escapeControls(in); got != want {
			t.Errorf("escapeControls(%q) = %q, want %q", in, got, want)
		}
	}
}
