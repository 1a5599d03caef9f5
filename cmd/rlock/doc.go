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
// current holders. The command then runs as a direct child with rlock's own stdin, stdout and stderr (the
// descriptors themselves: no copying), plus RLOCK_NAME and RLOCK_OWNER in its environment. When it exits, the lock is
// released and rlock exits with its status (128+N when a signal N killed it).
//
// The lock is a lease. Without -lease, the watchdog renews it every third of -watchdog (default 30 s) while the
// command runs, so a dead rlock frees it within -watchdog. The held context the library returns is cancelled when
// the lock stops being held: a renewal found it gone (it expired or was force-unlocked), or no renewal was confirmed
// before the lease could end on the server (Redis unreachable), or a fixed -lease ran out. exec then sends the
// command SIGTERM, and SIGKILL after -grace, and exits 79 whatever the command's status: another owner may have held
// the lock while it ran. A lease is not a fence: between the loss and the command's exit, two holders may run; keep
// -grace short and make the work idempotent, or fence writes with a token.
//
// # Signals
//
// SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to rlock are forwarded to the command. The command
// stays in rlock's process group, so it keeps the terminal: it can read from it, and Ctrl-C and Ctrl-\ reach it
// directly. rlock recognises those (it is in the terminal's foreground process group) and does not forward its own
// copy, so the command sees one Ctrl-C, not two. While rlock waits for the lock, SIGINT, SIGTERM, SIGHUP and SIGQUIT
// give up the wait (exit 128+N); a grant that races with the signal is released. On Linux the command gets SIGTERM
// if rlock itself dies (Pdeathsig), since nothing renews the lock any more.
//
// # Output
//
// By default rlock prints only what needs attention (errors, a busy lock, a lost lock, a failed release), so cron
// mails nothing on success; -q also silences a busy lock, -v narrates every step, and -json prints one JSON object
// per event (on stderr for exec, whose stdout is the command's; on stdout for the other subcommands).
//
// # Inspecting locks
//
// status reads the lock's hash (owner fields "<uuid>:<n>" with hold counts, Redisson read-write locks' mode) and
// its PTTL in one atomic script, through the library's transport: the rlock package has no call that lists the
// owners of a lock. force-unlock checks first that NAME is a lock, because deleting is what it does.
package main
