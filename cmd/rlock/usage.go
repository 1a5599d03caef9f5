package main

// usage is the reference printed by rlock -h and rlock help.
const usage = `Usage: rlock [-addr URL] [-json] [-v] COMMAND [FLAGS] ...

Run a command under a distributed lock held in Redis. The lock is Redisson's
RLock, byte for byte: a shell job and a Java service using Redisson exclude
each other on the same name.

Commands:
  exec [-wait D] [-q] [-lease D] [-owner UUID:N] [-grace D] [-watchdog D] NAME -- COMMAND [ARGS...]
        Acquire NAME (waiting up to -wait), run COMMAND with stdin, stdout
        and stderr passed through, release NAME when it exits, and exit with
        its status. The lock is renewed while COMMAND runs (or held for a
        fixed -lease). COMMAND runs in a process group of its own, under a
        supervisor process: if the lock is lost, or rlock itself is killed,
        the whole group gets SIGTERM, then SIGKILL after -grace (before the
        lease can end), and rlock exits 79. Processes COMMAND leaves behind
        in its group are stopped before the release. SIGINT, SIGTERM,
        SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to rlock are forwarded to
        the group. In the foreground of a terminal, COMMAND gets the
        terminal. COMMAND sees RLOCK_NAME and RLOCK_OWNER in its environment.
  status NAME
        Show whether NAME is locked, its owners with their hold counts and
        the remaining lease. Exit 0 when locked, 1 when free.
  force-unlock NAME
        Delete NAME whoever holds it and wake its waiters. The holder notices
        at its next renewal (an rlock exec holder then stops its command).
  lock -hold D [-wait D] [-q] [-owner UUID:N] NAME
        Acquire NAME for the fixed lease D and exit, printing the owner id on
        stdout. Release it with unlock, or let the lease run out.
  unlock -owner UUID:N NAME
        Release one hold of NAME by that owner. Exit 1 if it holds none.
  help  Print this text.

Common flags (before or after the command name):
  -addr URL   redis://[[user]:password@]host[:port][/db][?option=value...],
              rediss://... for TLS. Default: $REDIS_URL, else
              ` + defaultAddr + `. Options: dial_timeout, read_timeout,
              client_name... (see the conn package).
  -json       One JSON object per line and per event, with "event" and
              "time_ms" (Unix milliseconds): waiting, acquired, started,
              signal, lost, killed, exited, leftovers, released,
              release_failed, timeout, interrupted, status, force_unlocked,
              unlocked, not_held, error. exec writes them on stderr (stdout
              belongs to COMMAND), the other commands on stdout. A name or
              owner that is not UTF-8 also comes in base64 (name_b64,
              owner_b64). No output ever shows the URL's password.
  -v          Report every event on stderr; by default rlock prints only
              failures, so cron mails nothing on success.

exec and lock flags:
  -wait D      How long to wait for the lock: a duration (0 = one attempt)
               or forever (default). SIGINT, SIGTERM, SIGHUP or SIGQUIT give
               up the wait (exit 128+N).
  -q           Do not report a busy lock: exit 75 says it (for cron, which
               mails any output). Errors are still reported.
  -lease D     exec: hold the lock for at most D, not renewed: COMMAND gets
               SIGTERM -grace plus a margin (D/10, at most 1s) before D ends,
               and SIGKILL at the margin; rlock then exits 79. Default: the
               watchdog renews the lock while COMMAND runs.
  -hold D      lock: the lease (required).
  -owner UUID:N  Acquire as this owner (re-entering a lock it already holds,
               such as one taken by rlock lock or by a Redisson thread with
               that id). Default: a new owner.
  -grace D     exec: time between SIGTERM and SIGKILL when COMMAND must stop
               (default 10s, shortened to fit). At most half of -watchdog (or
               of -lease): a killed rlock's command must be gone before the
               lease can end on the server.
  -watchdog D  exec: the lease the watchdog keeps renewing, every third of it
               (default 30s, Redisson's lockWatchdogTimeout). If rlock dies,
               the lock frees itself within D; if Redis stops answering for
               D, the lock counts as lost.

Exit codes:
  0-255  exec: COMMAND's own status, when it ended while the lock was held
         (a release that then fails is a warning); 128+N when COMMAND was
         killed by signal N
  0      status: locked; other commands: success
  1      status: the lock is free; unlock: the owner holds no hold
  64     usage error (flags, arguments, URL); nothing was done
  69     Redis unreachable or refusing us (connection refused, timeout, TLS,
         NOAUTH, WRONGPASS, AUTH without a server password, NOPERM,
         READONLY replica); COMMAND was not run
  70     unexpected error, e.g. NAME is a key that is not a lock
  75     the lock was not acquired within -wait; COMMAND was not run
  79     exec only, and only when the lock was lost while COMMAND ran
         (force-unlocked, expired, no renewal confirmed in time) or its
         fixed -lease ran out: COMMAND's process group was stopped
  126    COMMAND could not be executed; 127: COMMAND not found (the lock
         was not taken)
  128+N  rlock gave up waiting because of signal N (130: SIGINT)

Examples:
  rlock exec -wait 0 -q nightly-report -- /usr/local/bin/report.sh
  rlock -addr redis://:secret@redis:6379 exec -wait 10m deploy -- ./deploy.sh v42
  rlock status deploy
`
