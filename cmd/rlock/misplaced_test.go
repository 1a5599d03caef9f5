//go:build unix

package main

import (
	"strings"
	"testing"
)

// A subcommand's flag given before the subcommand gets one line: the command line with the flag where it goes.
func TestMisplacedFlagGetsOneLineWithTheRightForm(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-wait", "0", "exec", "job", "--", "true"}, "rlock: flags of exec go after its name: rlock exec -wait 0 job -- true"},
		{[]string{"-json", "-q", "-grace=1s", "exec", "my job", "--", "true"},
			"rlock: flags of exec go after its name: rlock -json exec -q -grace=1s 'my job' -- true"},
		{[]string{"-hold", "5m", "exec", "job", "--", "true"}, "-hold is a flag of lock, not of exec"},
		{[]string{"-owner", "a:1"}, "-owner is a flag of exec and lock and unlock: it goes after the command name"},
		{[]string{"-bogus", "status", "job"}, "flag provided but not defined: -bogus"},
	} {
		h := newHarness(t)
		code, out, errs := h.runSync(t, tc.args...)
		if code != exitUsage || len(out) != 0 || len(errs) != 1 || !strings.Contains(errs[0], tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and one line with %q", tc.args, code, out, errs, exitUsage, tc.want)
		}
	}
}
