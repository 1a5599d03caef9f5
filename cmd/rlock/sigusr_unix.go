//go:build !windows

package main

import "syscall"

// The user signals rlock forwards to the command.
var sigUSR1, sigUSR2 = syscall.SIGUSR1, syscall.SIGUSR2
