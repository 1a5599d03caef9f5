package rlock

import (
	"errors"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/resp"
	"github.com/locksmith-go/locksmith/rlock/internal/scripts"
)

// A Redis user without pub/sub permission. Waiting rests on two permissions of the Redis user: subscribing to an
// object's channels (waiters are woken by messages) and publishing on them (a release, a permit given back, a latch
// opening wakes them). Neither is needed for correctness — every wait is bounded (waiter.go) — but without them a
// wake-up comes only at a waiter's bound. A refusal must never turn an operation that happened into a failure:
//
//   - Scripts publish with pcall (scripts.Publishes): a refused message does not abort the script after its writes,
//     and the reply says what was refused. published unwraps it, so that the caller acts on the script's own
//     reply: a release that deleted the lock reports success.
//   - The refused message is delivered to this client's own waiters of that channel, as if it had arrived.
//   - The first refusal of each kind (publish, subscribe) is logged once and reported once to the Observer
//     (PubSubDenied). A refused subscription is retried at pubSubDeniedRetry, not at RetryDelay, and not logged
//     again.
//   - From then on every waiter of this client that has a channel attempts again at least every recheckBound: the
//     other processes, usually running as the same user, cannot publish either, so every release would otherwise
//     be found only at the waiter's bound — for a permit-expirable semaphore, when the earliest permit's lease
//     ends, which may be hours.

// pubSubDeniedRetry is how often a subscription the server refused for want of permission is tried again: an ACL
// fixed on the server is picked up within it, without a request every RetryDelay meanwhile.
const pubSubDeniedRetry = 5 * time.Second

// published returns the reply of a publishing script of the object name (whose shard is sh; nil: the client finds
// it): v itself, or, when the server refused one of the script's messages, the script's own reply from inside the
// refusal (scripts.PublishRefusedMarker), after dealing with the refusal. name may be "" when sh is given (the log
// then names the channel). It does not block; it is cheap when nothing was refused (one comparison).
func (c *Client) published(sh *shard, name string, v resp.Value) resp.Value {
	if v.Type != resp.Array || len(v.Elems) < 3 || v.Elems[0].Str != scripts.PublishRefusedMarker {
		return v
	}
	inner := resp.Value{Type: resp.BulkString, Null: true} // the script answered nil
	if own := v.Elems[1]; own.Type == resp.Array && len(own.Elems) > 0 {
		inner = own.Elems[0]
	}
	if sh == nil {
		sh = c.shard(name)
	}
	c.publishRefused(sh, name, v.Elems[2].Str, v.Elems[3:])
	return inner
}

// publishRefused counts the messages refused, reports the first refusal, and hands each refused message to this
// client's own waiters of its channel. pairs are the refused channels and messages, alternating.
func (c *Client) publishRefused(sh *shard, name, reason string, pairs []resp.Value) {
	c.pubRefused.Add(int64(len(pairs) / 2))
	channel := ""
	if len(pairs) > 0 {
		channel = pairs[0].Str
	}
	if c.pubDenied.CompareAndSwap(false, true) {
		err := resp.NewServerError(reason)
		c.log.Warn("rlock: the server refused a message a script published (the Redis user lacks pub/sub "+
			"permission): the operation itself succeeded, but waiters in other processes are only woken at their "+
			"bounds; grant the user the channel pattern and +publish (see the package documentation, \"Redis "+
			"permissions (ACL)\")", "object", name, "channel", channel, "err", err)
		c.obs.PubSubDenied(PubSubDeniedEvent{Command: "publish", Name: name, Channel: channel, Err: err})
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		msg := pairs[i+1].Str
		if pairs[i+1].Type == resp.Integer {
			msg = strconv.FormatInt(pairs[i+1].Int, 10)
		}
		sh.deliverLocally(pairs[i].Str, msg)
	}
}

// deliverLocally hands a message that was published for an object of the shard, or should have been, to this
// client's waiters of that channel: its queue, or the lock queue whose grant channel it is. Called without the
// shard mutex.
func (sh *shard) deliverLocally(channel, payload string) {
	sh.mu.Lock()
	q, grant := sh.queues[channel], false
	if q == nil {
		for _, lq := range sh.queues {
			if lq.grantKey == channel {
				q, grant = lq, true
				break
			}
		}
	}
	sh.mu.Unlock()
	if q == nil {
		return
	}
	m := conn.Message{Kind: conn.KindMessage, Channel: channel, Payload: payload}
	if grant {
		q.onGrantMessage(m)
	} else {
		q.onMessage(m)
	}
}

// subscribeRefused reports whether err is the server's refusal of a subscription for want of permission, and
// reports the first such refusal (log, Observer).
func (c *Client) subscribeRefused(name, channel string, err error) bool {
	var se *resp.ServerError
	if !errors.As(err, &se) || se.Prefix != "NOPERM" {
		return false
	}
	if c.subDenied.CompareAndSwap(false, true) {
		c.log.Warn("rlock: the server refused a subscription (the Redis user lacks pub/sub permission): waiters "+
			"are only woken at their bounds, and the subscription is tried again every "+pubSubDeniedRetry.String()+
			"; grant the user the channel pattern and +subscribe (see the package documentation, \"Redis "+
			"permissions (ACL)\")", "object", name, "channel", channel, "err", err)
		c.obs.PubSubDenied(PubSubDeniedEvent{Command: "subscribe", Name: name, Channel: channel, Err: err})
	}
	return true
}

// capBound shortens a waiter's bound to recheckBound once the server refused this client a pub/sub permission:
// messages are then not to be counted on.
func (c *Client) capBound(bound time.Duration) time.Duration {
	if bound > recheckBound && (c.pubDenied.Load() || c.subDenied.Load()) {
		return recheckBound
	}
	return bound
}
