package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/locksmith-go/locksmith/rlock"
)

// runStatus is `rlock status NAME`: whether the lock is held, by whom (owner fields and hold counts) and for how
// much longer. It exits 0 when the lock is held and 1 when it is free, so scripts can test it.
func runStatus(e *env, c *common, args []string) int {
	fs := newFlagSet("status", "rlock status NAME", e, c)
	name, code, ok := parseNamed(fs, args)
	if !ok {
		return code
	}
	rep := c.reporter(c.stdout, c.stderr)
	lk, addr, code, ok := connect(e, c, rlock.DefaultWatchdogTimeout, rep, name)
	if !ok {
		return code
	}
	defer lk.Close()
	st, err := lk.Status(context.Background(), name) // bounded by the transport's response timeout
	if err != nil {
		return rep.fail(describe(err, addr, name), name)
	}
	ev := event{Event: evStatus, Name: name, Locked: ptr(st.locked()), Owners: st.Holders, Mode: st.Mode}
	if !st.locked() {
		rep.emit(ev, result, shown(name)+": free")
		return exitNo
	}
	if st.TTL >= 0 {
		ev.TTLMS = ms(st.TTL)
	} else if st.TTL == rlock.TTLNoExpiry {
		ev.TTLMS = ptr(int64(-1))
	}
	rep.emit(ev, result, formatStatus(st))
	return exitOK
}

// formatStatus renders a held lock for people:
//
//	deploy: locked, lease ends in 27.412s
//	  owner 6c9f...:1  holds 1
func formatStatus(st lockStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: locked", shown(st.Name))
	if st.Mode != "" {
		fmt.Fprintf(&b, " (read-write lock, %s mode)", shown(st.Mode))
	}
	fmt.Fprintf(&b, ", %s", ttlText(st.TTL))
	for _, h := range st.Holders {
		fmt.Fprintf(&b, "\n  owner %s  holds %d", shown(h.Owner), h.Holds)
	}
	return b.String()
}

// runForceUnlock is `rlock force-unlock NAME`: delete the lock whoever holds it and publish the unlock message,
// as Redisson's forceUnlock. It refuses to delete a key that is not a lock.
func runForceUnlock(e *env, c *common, args []string) int {
	fs := newFlagSet("force-unlock", "rlock force-unlock NAME", e, c)
	name, code, ok := parseNamed(fs, args)
	if !ok {
		return code
	}
	rep := c.reporter(c.stdout, c.stderr)
	lk, addr, code, ok := connect(e, c, rlock.DefaultWatchdogTimeout, rep, name)
	if !ok {
		return code
	}
	defer lk.Close()
	ctx := context.Background() // each call is bounded by the transport's response timeout
	// Read the holders first: to say whose lock was broken, and because force unlock deletes the key whatever its
	// type — a mistyped name must not delete someone's data.
	st, err := lk.Status(ctx, name)
	if err != nil {
		return rep.fail(describe(err, addr, name), name)
	}
	deleted, err := lk.ForceUnlock(ctx, name)
	if err != nil {
		return rep.fail(describe(err, addr, name), name)
	}
	ev := event{Event: evForced, Name: name, Deleted: ptr(deleted), Owners: st.Holders}
	text := shown(name) + ": was not locked"
	if deleted {
		text = shown(name) + ": force-unlocked"
		if len(st.Holders) > 0 {
			text += " (it was " + describeHolders(st) + ")"
		}
	}
	rep.emit(ev, result, text)
	return exitOK
}
