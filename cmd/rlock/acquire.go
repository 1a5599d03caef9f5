package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

// acquirer takes a lock for exec and lock: one attempt first, then, when the lock is busy and -wait allows, a wait
// that is reported with the current holders. A caught signal that gives up a wait ends it.
type acquirer struct {
	rep    *reporter
	lk     locker
	addr   string // host:port, for messages
	name   string
	wait   time.Duration // waitForever, 0 (one attempt) or a bound
	lease  time.Duration // 0: the watchdog
	owner  string        // "": a new owner
	wd     time.Duration // the watchdog lease, for messages
	sigs   chan os.Signal
	notRun string // appended to the timeout and interruption messages: "; ./deploy.sh was not run"
	quiet  bool   // -q: a busy lock (exit 75) is not reported without -v; the exit code says it
}

// grant is an acquired lock.
type grant struct {
	held  context.Context // cancelled, with a cause, when the lock stops being held
	owner string
	at    time.Time // when the acquire returned
	// leaseFrom is when the lease began at the latest, as far as rlock itself can tell: before the first attempt
	// was sent when that attempt got the lock, else when the acquire returned. After a wait that is later than the
	// grant by the hand-over's message and wake-up, which a loaded machine can stretch past the stop margin: the
	// library's account (rlock.LeaseEnd), when it has one, comes first (leaseEnd).
	leaseFrom time.Time
}

// acquire takes the lock. It returns the grant, or false and the exit code when the lock was not acquired
// (timeout, signal, error: each already reported).
func (x *acquirer) acquire() (g grant, code int, ok bool) {
	var held context.Context
	var owner string
	start := time.Now()
	a := acquisition{Name: x.name, Lease: x.lease, Owner: x.owner}
	attempt := func(a acquisition) (os.Signal, error) {
		return interruptible(x.sigs, func(ctx context.Context) error {
			var err error
			held, owner, err = x.lk.Acquire(ctx, a)
			return err
		})
	}
	sig, err := attempt(a) // Wait 0: a single attempt, the whole acquire when the lock is free
	leaseFrom := start
	if sig == nil && errors.Is(err, rlock.ErrNotAcquired) && x.wait != 0 {
		var st lockStatus
		if st, sig = x.status(); sig == nil {
			a.Wait = waitForever
			if x.wait > 0 {
				a.Wait = max(x.wait-time.Since(start), 0)
			}
			x.rep.emit(x.busyEvent(evWaiting, st, time.Since(start)), info,
				fmt.Sprintf("%s is %s; waiting %s", shown(x.name), describeHolders(st), waitText(x.wait)))
			sig, err = attempt(a)
			leaseFrom = time.Now()
		}
	}
	switch {
	case sig != nil:
		if err == nil {
			// Granted just as the signal came: give it back before leaving.
			ctx, cancel := context.WithTimeout(context.Background(), releaseBound)
			_ = x.lk.Release(ctx, held, x.name)
			cancel()
		}
		x.rep.emit(event{Event: evInterrupted, Name: x.name, Signal: sigName(sig), WaitedMS: ms(time.Since(start))}, problem,
			fmt.Sprintf("gave up waiting for %s (%s)%s", shown(x.name), sigName(sig), x.notRun))
		return grant{}, sigCode(sig), false
	case errors.Is(err, rlock.ErrNotAcquired):
		st, sig := x.status()
		if sig != nil {
			return grant{}, sigCode(sig), false
		}
		k := problem
		if x.quiet {
			k = info
		}
		x.rep.emit(x.busyEvent(evTimeout, st, time.Since(start)), k,
			fmt.Sprintf("could not acquire %s within %v: it is %s%s", shown(x.name), x.wait, describeHolders(st), x.notRun))
		return grant{}, exitNotAcquired, false
	case err != nil:
		return grant{}, x.rep.fail(describe(err, x.addr, x.name), x.name), false
	}
	at := time.Now()
	leaseText := fmt.Sprintf("watchdog lease %v, renewed every %v", x.wd, x.wd/3)
	ev := event{Event: evAcquired, Name: x.name, Owner: owner, WaitedMS: ms(at.Sub(start)), LeaseMS: ms(x.wd), Watchdog: true}
	if x.lease > 0 {
		leaseText = fmt.Sprintf("fixed lease %v", x.lease)
		ev.LeaseMS, ev.Watchdog = ms(x.lease), false
	}
	x.rep.emit(ev, info, fmt.Sprintf("acquired %s as %s %s (%s)", shown(x.name), shown(owner), afterText(at.Sub(start)), leaseText))
	return grant{held: held, owner: owner, at: at, leaseFrom: leaseFrom}, exitOK, true
}

// status reads the lock's holders for a message; a failure to read them only makes the message vaguer. A signal
// that gives up the wait interrupts it.
func (x *acquirer) status() (lockStatus, os.Signal) {
	var st lockStatus
	sig, err := interruptible(x.sigs, func(ctx context.Context) error {
		var err error
		st, err = x.lk.Status(ctx, x.name)
		return err
	})
	if err != nil {
		st = lockStatus{Name: x.name, Type: "unknown"}
	}
	return st, sig
}

// busyEvent is the waiting or timeout event for a busy lock.
func (x *acquirer) busyEvent(name string, st lockStatus, waited time.Duration) event {
	ev := event{Event: name, Name: x.name, Owners: st.Holders, Mode: st.Mode, WaitedMS: ms(waited)}
	if st.TTL >= 0 {
		ev.TTLMS = ms(st.TTL)
	}
	if name == evWaiting {
		ev.WaitMS = ms(x.wait)
		if x.wait < 0 {
			ev.WaitMS = ptr(int64(-1))
		}
	}
	return ev
}

// afterText says how long an acquire took: "at once" on the uncontended path, else "after 1.485s".
func afterText(d time.Duration) string {
	if d < 10*time.Millisecond {
		return "at once"
	}
	return "after " + d.Round(time.Millisecond).String()
}
