// Rlock runs a command under a distributed lock held in Redis, like `etcdctl lock` and `consul lock`, and is
// wire-compatible with Redisson's RLock: a shell job and a Java service using Redisson exclude each other on the
// same lock name.
//
//	rlock [-addr URL] exec [-wait D] [-lease D] [-owner UUID:N] [-grace D] NAME -- COMMAND [ARGS...]
//	rlock [-addr URL] status NAME
//	rlock [-addr URL] force-unlock NAME
//	rlock [-addr URL] lock -hold D [-wait D] [-owner UUID:N] NAME
//	rlock [-addr URL] unlock -owner UUID:N NAME
//
// Run `rlock -h` for the flags and the exit codes; README.md has examples (a cron job, a deploy script, a
// one-at-a-time migration).
//
// # How exec runs the command
//
// exec resolves COMMAND in PATH first (a typo never takes the lock: exit 127 or 126), connects (exit 69 with advice
// when Redis cannot be reached or refuses the credentials), and acquires NAME with the rlock package: one attempt,
// then, when the lock is busy, a wait bounded by -wait that is woken by the unlock message and reported with the
// current holders. It then starts a supervisor — rlock re-executed in a hidden mode, in a process group of its own —
// which starts COMMAND in a new process group with rlock's own stdin, stdout and stderr (the descriptors
// themselves: no copying), plus RLOCK_NAME and RLOCK_OWNER in its environment. When the group is empty, the lock is
// released and rlock exits with COMMAND's status (128+N when a signal N killed it).
//
// The lock is a lease. Without -lease, the watchdog renews it every third of -watchdog (default 30 s) while the
// command runs, so a dead rlock frees it within -watchdog. The held context the library returns is cancelled when
// the lock stops being held: a renewal found it gone (it expired or was force-unlocked), or no renewal was confirmed
// before the lease could end on the server (Redis unreachable). exec then has the supervisor send the whole group
// SIGTERM (and SIGCONT), and SIGKILL after -grace, and exits 79. A fixed -lease is stopped on the supervisor's own
// timer: SIGTERM -grace plus a margin before the lease ends, SIGKILL at the margin. Exit 79 means exactly that the
// lock was lost, or its fixed lease ran out, while COMMAND ran; a COMMAND that ended while the lock was held gives
// its own status, and a release that then fails or finds the lock gone is a warning.
//
// The supervisor is what keeps the promise when rlock itself dies (kill -9, the OOM killer): it holds a pipe whose
// only writer is rlock, and when the pipe ends without a word it stops the group, SIGTERM then SIGKILL after -grace,
// before the lease can end on the server — at least two thirds of -watchdog is left there (renewed every third),
// and -grace may be at most half of it (or of -lease): a larger -grace is a usage error, the default is shortened
// to fit. Processes the command leaves behind in its group are stopped before the lock is released. On Linux the
// supervisor is the group's child subreaper, so it sees every process of the group exit. A process that leaves the
// group (setsid) escapes all this. On systems without process groups (Windows), COMMAND runs as a direct child: it
// is killed when the lock is lost or a fixed lease ends, and outlives a killed rlock.
//
// A lease is not a fence: when the lock is lost while rlock lives, two holders may run between the loss and the
// group's end (at most -grace); keep -grace short and make the work idempotent, or fence writes with a token.
//
// # Signals and the terminal
//
// SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to rlock are forwarded to COMMAND's process group.
// When rlock runs in the foreground of its terminal, COMMAND's group becomes the terminal's foreground group, as a
// shell does for a job: COMMAND can read from the terminal and gets Ctrl-C and Ctrl-\ directly, once (rlock, in the
// background, gets no copy), and rlock's group gets the terminal back when COMMAND's group is empty. A SIGHUP that
// reaches rlock while COMMAND has the terminal is not forwarded: a hangup reaches the foreground group from the
// kernel. Ctrl-Z cannot suspend a command under rlock (the shell regains the terminal only when rlock stops, and a
// stopped rlock renews nothing): the supervisor continues it at once. SIGCONT (a shell's fg or bg) is passed on to
// the group, with the terminal on fg. While rlock waits for the lock, SIGINT, SIGTERM, SIGHUP and SIGQUIT give up
// the wait (exit 128+N); a grant that races with the signal is released. The supervisor ignores SIGINT, SIGTERM and
// SIGHUP, so that it outlives rlock when a service manager signals every process of the unit.
//
// # Output
//
// By default rlock prints only what needs attention (errors, a busy lock, a lost lock, a failed release), so cron
// mails nothing on success; -q also silences a busy lock, -v narrates every step, and -json prints one JSON object
// per event (on stderr for exec, whose stdout is the command's; on stdout for the other subcommands). The password
// of the Redis URL never appears in any of it (redis://user:xxxxx@host), and lock names and owner ids that hold
// control characters or invalid UTF-8 are quoted for people and carried in base64 beside the JSON string.
//
// # Inspecting locks
//
// status reads the lock's hash (owner fields "<uuid>:<n>" with hold counts, Redisson read-write locks' mode) and
// its PTTL in one atomic script, through the library's transport: the rlock package has no call that lists the
// owners of a lock. force-unlock checks first that NAME is a lock, because deleting is what it does.
package main
