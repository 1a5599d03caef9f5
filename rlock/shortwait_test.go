package rlock

import (
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/timer"
)

// A wait shorter than the short-wait wheel's rotation is armed on it, a longer one on the transport's wheel, and
// re-arming moves it from one to the other.
func TestShortWaitsRunOnTheShortWaitWheel(t *testing.T) {
	c := &Client{timer: timer.New(timer.Config{}), short: newShortWaitTimer(), epoch: time.Now()}
	defer c.timer.Stop()
	defer c.stopShortWaits()
	sh := &shard{c: c}
	w := &waiter{sh: sh, state: wIdle}
	w.call = &stubCall{}
	sh.mu.Lock()
	armed := time.Now()
	w.armLocked(5 * time.Millisecond)
	short, long := c.short.Pending(), c.timer.Pending()
	late := time.Since(armed) >= 5*time.Millisecond // the wait may have fallen due meanwhile (Run waits for sh.mu)
	w.armLocked(time.Minute)
	short2, long2 := c.short.Pending(), c.timer.Pending()
	w.stopTimerLocked()
	sh.mu.Unlock()
	if (short != 1 && !(late && short == 0)) || long != 0 {
		t.Errorf("a 5 ms wait: %d on the short-wait wheel, %d on the transport's; want 1, 0", short, long)
	}
	if short2 != 0 || long2 != 1 {
		t.Errorf("re-armed for a minute: %d on the short-wait wheel, %d on the transport's; want 0, 1", short2, long2)
	}
}
