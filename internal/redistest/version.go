package redistest

import (
	"os/exec"
	"regexp"
	"strconv"
	"sync"
)

var (
	versionOnce sync.Once
	major       int
)

var versionRe = regexp.MustCompile(`v=(\d+)\.`)

// serverMajor returns redis-server's major version (0 when unknown), so the
// config only uses directives the installed server knows.
func serverMajor() int {
	versionOnce.Do(func() {
		bin, err := serverBinary()
		if err != nil {
			return
		}
		out, err := exec.Command(bin, "--version").Output()
		if err != nil {
			return
		}
		if m := versionRe.FindSubmatch(out); m != nil {
			major, _ = strconv.Atoi(string(m[1]))
		}
	})
	return major
}
