package scripts

import (
	"regexp"
	"strings"
	"testing"
)

// The table's own consistency, which needs no server: the scripts' behaviour is tested against a real
// redis-server by package rlock, through the same entries.

// TestEveryScriptIsInTheTableOnceByName checks that each entry has a name of the form "<kind>.<operation>" that no
// other entry has, a source and a described key.
func TestEveryScriptIsInTheTableOnceByName(t *testing.T) {
	name := regexp.MustCompile(`^[a-z]+\.[a-z]+$`)
	seen := map[string]bool{}
	for _, s := range All {
		if !name.MatchString(s.Name) {
			t.Errorf("%q is not a name of the form <kind>.<operation>", s.Name)
		}
		if seen[s.Name] {
			t.Errorf("script name %q appears twice", s.Name)
		}
		seen[s.Name] = true
		if s.Source == "" || s.Reply == "" || len(s.Keys) == 0 {
			t.Errorf("%s: a source, its reply and its keys must be described", s.Name)
		}
	}
}

// TestPublishingScriptsTakeThePublishCommandLast checks that a script that publishes, and only one, lists the
// publish command as its last argument, as its prelude takes it.
func TestPublishingScriptsTakeThePublishCommandLast(t *testing.T) {
	for _, s := range All {
		last := len(s.Args) > 0 && s.Args[len(s.Args)-1] == publishArg
		if Publishes(s.Source) != last {
			t.Errorf("%s: a script that publishes, and only one, must list the publish command as its last argument",
				s.Name)
		}
	}
}

// TestScriptsPublishOnlyThroughPub checks that every message a script sends goes through pub (publishLua) or a
// fast path's fastPublishLua, so that a refusal never aborts a script after its writes: no script calls the
// publish command with redis.call.
func TestScriptsPublishOnlyThroughPub(t *testing.T) {
	for _, s := range All {
		if strings.Contains(s.Source, "redis.call(publish") || strings.Contains(s.Source, "redis.call('publish'") ||
			strings.Contains(s.Source, "redis.call('spublish'") {
			t.Errorf("%s publishes with redis.call: use pub(channel, message)", s.Name)
		}
		if strings.Contains(s.Source, "pub(") != Publishes(s.Source) {
			t.Errorf("%s: pub without the publishLua prelude, or the reverse", s.Name)
		}
	}
}
