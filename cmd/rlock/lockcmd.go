package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

const lockSynopsis = "rlock lock -hold D [-wait D] [-q] [-owner UUID:N] NAME"

// runLock is `rlock lock -hold D NAME`: acquire the lock for a fixed lease and exit, printing the owner id, for
// scripts that release it later with `rlock unlock -owner ID NAME` (or let the lease end). A watchdog cannot outlive
// the process, so the lease is always fixed.
func runLock(e *env, c *common, args []string) int {
	fs := newFlagSet("lock", lockSynopsis, e, c)
	var o lockFlags
	o.define(fs)
	name, code, ok := parseNamed(fs, args)
	if !ok {
		return code
	}
	if o.hold < rlock.MinLease {
		return usageError(fs, "-hold: give the lease, at least %v (the lock outlives rlock lock, so nothing renews it)", rlock.MinLease)
	}
	if o.owner != "" {
		if err := checkOwner(o.owner); err != nil {
			return usageError(fs, "%v", err)
		}
	}
	rep := c.reporter(c.stdout, c.stderr)
	lk, addr, code, ok := connect(e, c, rlock.DefaultWatchdogTimeout, rep, name)
	if !ok {
		return code
	}
	defer lk.Close() // Close keeps held locks: this one ends with its lease, or with rlock unlock
	x := &acquirer{rep: rep, lk: lk, addr: addr, name: name, wait: time.Duration(o.wait), lease: o.hold, owner: o.owner,
		wd: rlock.DefaultWatchdogTimeout, sigs: make(chan os.Signal, 2*len(forwardedSignals)), quiet: o.quiet}
	e.notify(x.sigs, forwardedSignals...)
	defer e.stopNotify(x.sigs)
	g, code, ok := x.acquire()
	if !ok {
		return code
	}
	id, at := g.owner, g.at
	// The owner id is the result: OWNER=$(rlock lock -hold 10m deploy). -json has it in the acquired event.
	rep.say(result, id)
	rep.say(info, fmt.Sprintf("%s is held until about %s unless released: rlock unlock -owner %s %s",
		shown(name), at.Add(o.hold).Format(time.TimeOnly), shellQuote(id), shellQuote(name)))
	return exitOK
}

// lockFlags are lock's own flags.
type lockFlags struct {
	hold  time.Duration
	wait  waitValue
	owner string
	quiet bool
}

// define adds lock's flags to fs, with their defaults.
func (o *lockFlags) define(fs *flag.FlagSet) {
	fs.DurationVar(&o.hold, "hold", 0, "the lease: how long the lock is held unless released earlier (required)")
	o.wait = waitValue(waitForever)
	fs.Var(&o.wait, "wait", "how long to wait for the lock: a `duration` (0 = a single attempt) or forever")
	fs.StringVar(&o.owner, "owner", "", "acquire as this owner `UUID:N`, re-entering what it holds (default: a new owner)")
	fs.BoolVar(&o.quiet, "q", false, "do not report a busy lock (exit 75 still says so)")
}

// defineUnlockFlags adds unlock's own flag, -owner, to fs.
func defineUnlockFlags(fs *flag.FlagSet) *string {
	return fs.String("owner", "", "the owner `UUID:N` whose hold to release (required)")
}

// runUnlock is `rlock unlock -owner UUID:N NAME`: release one hold of the lock by that owner.
func runUnlock(e *env, c *common, args []string) int {
	fs := newFlagSet("unlock", "rlock unlock -owner UUID:N NAME", e, c)
	owner := defineUnlockFlags(fs)
	name, code, ok := parseNamed(fs, args)
	if !ok {
		return code
	}
	if *owner == "" {
		return usageError(fs, "-owner is required: the owner printed by rlock lock, or shown by rlock status")
	}
	if err := checkOwner(*owner); err != nil {
		return usageError(fs, "%v", err)
	}
	rep := c.reporter(c.stdout, c.stderr)
	lk, addr, code, ok := connect(e, c, rlock.DefaultWatchdogTimeout, rep, name)
	if !ok {
		return code
	}
	defer lk.Close()
	ctx := context.Background() // each call is bounded by the transport's response timeout
	err := lk.Release(ctx, lk.WithOwner(ctx, *owner), name)
	switch {
	case errors.Is(err, rlock.ErrNotHeld):
		rep.emit(event{Event: evNotHeld, Name: name, Owner: *owner}, problem,
			fmt.Sprintf("%s is not held by %s: it expired, was force-unlocked, or was never taken by that owner", shown(name), shown(*owner)))
		return exitNo
	case err != nil:
		return rep.fail(describe(err, addr, name), name)
	}
	ev := event{Event: evUnlocked, Name: name, Owner: *owner, Holds: ptr(int64(0))}
	if st, err := lk.Status(ctx, name); err == nil {
		for _, h := range st.Holders {
			if h.Owner == *owner {
				ev.Holds = ptr(h.Holds)
			}
		}
	}
	rep.emit(ev, info, fmt.Sprintf("released one hold of %s by %s; %d left", shown(name), shown(*owner), *ev.Holds))
	return exitOK
}
