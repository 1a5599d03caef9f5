package main

import "syscall"

// Windows has no user signals: these numbers (Linux's) are never delivered there, so forwarding them is a no-op.
var sigUSR1, sigUSR2 = syscall.Signal(0xa), syscall.Signal(0xc)
