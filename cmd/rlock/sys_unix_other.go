//go:build unix && !linux

package main

import "os"

// becomeSubreaper does nothing: only Linux has a child subreaper. The command's orphans go to init, and the
// supervisor looks every leftoverPoll whether its process group is empty.
func becomeSubreaper() {}

// selfExecutable returns the path of the running binary, to re-execute it as the supervisor.
func selfExecutable() (string, error) { return os.Executable() }
