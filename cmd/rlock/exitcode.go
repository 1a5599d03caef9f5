package main

// Exit codes. When the command ran under the lock from start to end, rlock exits with the command's own status
// (0–255), or 128+N when the command was killed by signal N, as shells report it. Every other outcome has a code of
// its own, so that a script can tell "the lock was busy" from "the command failed" with `case $?`. The values
// follow sysexits.h where one fits (64, 69, 70, 75) and the shell where it has a convention (126, 127, 128+N);
// 79 (lock lost) has no standard counterpart and is chosen outside the sysexits range. A command may of course
// exit with one of these values itself: use -json when that ambiguity matters (its events say what happened).
const (
	// exitOK: success (the command exited 0, or a query or lock operation succeeded).
	exitOK = 0

	// exitNo is the negative answer of a query: `status` found the lock free, `unlock` found that the owner does
	// not hold it.
	exitNo = 1

	// exitUsage (EX_USAGE): bad flags, arguments or URL; nothing was done.
	exitUsage = 64

	// exitUnavailable (EX_UNAVAILABLE): Redis could not be reached or refused the client (connection refused,
	// timeout, TLS failure, NOAUTH, WRONGPASS, a replica that refuses writes). The command was not run.
	exitUnavailable = 69

	// exitSoftware (EX_SOFTWARE): an unexpected error, such as a server error reply (the key exists and is not a
	// lock) or a protocol error.
	exitSoftware = 70

	// exitNotAcquired (EX_TEMPFAIL, "try again later"): the lock was not acquired within -wait; the command was not
	// run.
	exitNotAcquired = 75

	// exitLost: the lock stopped being held while the command ran (a renewal found it gone — expired or
	// force-unlocked — or the lease ran out locally because Redis did not confirm a renewal in time, or a fixed
	// -lease ended). The command was sent SIGTERM (and SIGKILL after -grace); another owner may have held the lock
	// while it ran.
	exitLost = 79

	// exitCannotExec: the command was found but could not be started (not executable, bad format), as sh reports.
	exitCannotExec = 126

	// exitNotFound: the command was not found in PATH, as sh reports. The lock was not taken.
	exitNotFound = 127

	// exitSignalBase + N: the command was killed by signal N, or rlock gave up waiting for the lock because it
	// received signal N (130 for SIGINT, 143 for SIGTERM).
	exitSignalBase = 128
)
