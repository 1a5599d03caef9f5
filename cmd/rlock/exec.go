package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

const execSynopsis = "rlock exec [-wait D] [-q] [-lease D] [-owner UUID:N] [-grace D] [-watchdog D] NAME -- COMMAND [ARGS...]"

// defaultGrace is the default time between SIGTERM and SIGKILL after the lock is lost: long enough for a command
// to stop cleanly, short enough that it does not run on for long while another owner may hold the lock.
const defaultGrace = 10 * time.Second

// releaseBound bounds the release of a lock that was granted just as a signal made rlock give up the wait.
const releaseBound = 5 * time.Second

// execRun is one `rlock exec`: the lock is acquired, the command run under it, the lock released.
type execRun struct {
	acquirer
	e     *env
	argv  []string // the command as given
	path  string   // argv[0] resolved in PATH
	grace time.Duration
}

// runExec is `rlock exec`.
func runExec(e *env, c *common, args []string) int {
	flags := newFlagSet("exec", execSynopsis, e, c)
	var o execFlags
	o.define(flags)
	if code, ok := parseFlags(flags, args); !ok {
		return code
	}
	rest := flags.Args()
	switch {
	case len(rest) == 0:
		return usageError(flags, "missing lock NAME and COMMAND")
	case rest[0] == "":
		return usageError(flags, "the lock NAME must not be empty")
	}
	name, rest := rest[0], rest[1:]
	if len(rest) > 0 && rest[0] != "--" && strings.HasPrefix(rest[0], "-") {
		return usageError(flags, "%q after NAME: flags go before NAME", rest[0])
	}
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return usageError(flags, "missing COMMAND: rlock exec NAME -- COMMAND [ARGS...]")
	}
	switch {
	case o.lease < 0 || (o.lease > 0 && o.lease < rlock.MinLease):
		return usageError(flags, "-lease %v: want 0 (the watchdog) or at least %v", o.lease, rlock.MinLease)
	case o.grace < 0:
		return usageError(flags, "-grace %v: must not be negative", o.grace)
	case o.watchdog < rlock.MinLease:
		return usageError(flags, "-watchdog %v: want at least %v", o.watchdog, rlock.MinLease)
	}
	graceSet := false
	flags.Visit(func(f *flag.Flag) { graceSet = graceSet || f.Name == "grace" })
	leaseFlag, leaseLen := "-watchdog", o.watchdog
	if o.lease > 0 {
		leaseFlag, leaseLen = "-lease", o.lease
	}
	if limit := maxGrace(o.lease, o.watchdog); !graceSet {
		o.grace = min(o.grace, limit) // the default, shortened to fit a short lease
	} else if o.grace > limit {
		return usageError(flags, "-grace %v does not fit in the %v lease (%s): the command must be stopped, SIGKILL "+
			"included, before the lease can end on the server, even when rlock itself is killed, so -grace may be at "+
			"most half of %s (%v); lower -grace or raise %s", o.grace, leaseLen, leaseFlag, leaseFlag, limit, leaseFlag)
	}
	if o.owner != "" {
		if err := checkOwner(o.owner); err != nil {
			return usageError(flags, "%v", err)
		}
	}

	rep := c.reporter(c.stderr, c.stderr)
	path, f := lookCommand(rest[0])
	if f != nil {
		// Checked before connecting: a typo must not take the lock, nor wait for it.
		return rep.fail(*f, name)
	}
	lk, addr, code, ok := connect(e, c, o.watchdog, rep, name)
	if !ok {
		return code
	}
	defer lk.Close()
	x := &execRun{e: e, argv: rest, path: path, grace: o.grace, acquirer: acquirer{
		rep: rep, lk: lk, addr: addr, name: name, wait: time.Duration(o.wait), lease: o.lease, owner: o.owner,
		wd: o.watchdog, sigs: make(chan os.Signal, 2*(len(forwardedSignals)+len(jobControlSignals))),
		notRun: fmt.Sprintf("; %s was not run", rest[0]), quiet: o.quiet,
	}}
	e.notify(x.sigs, append(forwardedSignals, jobControlSignals...)...)
	defer e.stopNotify(x.sigs)
	return x.run()
}

// execFlags are exec's own flags.
type execFlags struct {
	wait                   waitValue
	lease, grace, watchdog time.Duration
	owner                  string
	quiet                  bool
}

// define adds exec's flags to fs, with their defaults.
func (o *execFlags) define(fs *flag.FlagSet) {
	o.wait = waitValue(waitForever)
	fs.Var(&o.wait, "wait", "how long to wait for the lock: a `duration` (0 = a single attempt) or forever")
	fs.DurationVar(&o.lease, "lease", 0, "fixed lease, not renewed: the command gets SIGTERM -grace (plus a margin) before it ends (0 = the watchdog renews the lock)")
	fs.StringVar(&o.owner, "owner", "", "acquire as this owner `UUID:N`, re-entering what it holds (default: a new owner)")
	fs.DurationVar(&o.grace, "grace", defaultGrace, "time between SIGTERM and SIGKILL when the command must stop; at most half of -watchdog (or -lease)")
	fs.BoolVar(&o.quiet, "q", false, "do not report a busy lock (exit 75 still says so): for cron, which mails any output")
	fs.DurationVar(&o.watchdog, "watchdog", rlock.DefaultWatchdogTimeout, "watchdog lease, renewed every third of it while the command runs")
}

// lookCommand resolves the command in PATH, with the shell's exit codes when it cannot be run.
func lookCommand(name string) (string, *failure) {
	path, err := exec.LookPath(name)
	switch {
	case err == nil:
		return path, nil
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return "", &failure{exitNotFound, fmt.Sprintf("command not found: %s (not in PATH, or no such file); the lock was not taken", name)}
	case errors.Is(err, exec.ErrDot):
		return "", &failure{exitCannotExec, fmt.Sprintf("%s is found only through '.' in PATH; run it as ./%s", name, name)}
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EISDIR):
		return "", &failure{exitCannotExec, fmt.Sprintf("cannot execute %s: %v (is it executable?); the lock was not taken", name,
			errors.Unwrap(err))}
	}
	return "", &failure{exitCannotExec, fmt.Sprintf("cannot execute %s: %v", name, err)}
}

// run acquires the lock, runs the command under it and releases it.
func (x *execRun) run() int {
	g, code, ok := x.acquire()
	if !ok {
		return code
	}
	return x.supervise(g)
}

// describeHolders says who holds a lock, for messages: "held by ID (2 holds), lease ends in 28.4s".
func describeHolders(st lockStatus) string {
	switch st.Type {
	case "none":
		return "free now (it was released meanwhile)"
	case "unknown":
		return "held by another owner"
	}
	var b strings.Builder
	b.WriteString("held by ")
	for i, h := range st.Holders {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%d %s)", shown(h.Owner), h.Holds, plural(h.Holds, "hold", "holds"))
	}
	if len(st.Holders) == 0 {
		b.WriteString("nobody (an empty hash)")
	}
	if st.Mode != "" {
		fmt.Fprintf(&b, " in %s mode", shown(st.Mode))
	}
	b.WriteString(", ")
	b.WriteString(ttlText(st.TTL))
	return b.String()
}

// ttlText describes a remaining lease.
func ttlText(ttl time.Duration) string {
	switch {
	case ttl == rlock.TTLNoExpiry:
		return "no expiry (the key was not written by a lock client)"
	case ttl < 0:
		return "no lease"
	}
	return "lease ends in " + ttl.Round(time.Millisecond).String()
}

// waitText describes the -wait bound.
func waitText(w time.Duration) string {
	if w < 0 {
		return "as long as it takes"
	}
	return "up to " + w.String()
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
