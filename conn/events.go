package conn

import (
	"strconv"
	"time"
)

// EventKind says what happened to the Client's connections.
type EventKind uint8

const (
	// EventConnected: a connection completed its first handshake (for its keeper in the pool: the Client's start,
	// a new cluster node, or the first success after failed attempts).
	EventConnected EventKind = iota + 1
	// EventLost: an open connection closed; Event.Err says why (a *ConnError: the peer closed it, a reset, a
	// response timeout, a protocol error, a failover that moved it). Its commands in flight failed; a
	// replacement is being dialled.
	EventLost
	// EventReconnected: a connection was established again after a loss.
	EventReconnected
	// EventFailover: the master changed — a Sentinel Client moved to a new master, or a cluster refresh found a
	// master's slots served by another node while the old one left the map (a replica promoted). Event.Prev is
	// the old master, Event.Addr the new one.
	EventFailover
	// EventResubscribed: a pub/sub connection was established again and the server confirmed its channels
	// anew (their handlers receive KindResubscribed; messages published meanwhile may have been missed).
	EventResubscribed
)

// String names the kind in lower case: "connected", "lost", "reconnected", "failover", "resubscribed".
func (k EventKind) String() string {
	switch k {
	case EventConnected:
		return "connected"
	case EventLost:
		return "lost"
	case EventReconnected:
		return "reconnected"
	case EventFailover:
		return "failover"
	case EventResubscribed:
		return "resubscribed"
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// The roles of a connection, in Event.Role.
const (
	RoleCommand  = "command"  // a pooled connection (the latency lane included) carrying commands
	RolePubSub   = "pubsub"   // a node's pub/sub connection
	RoleSentinel = "sentinel" // a Sentinel Client's connection to a Sentinel, watching for failovers
)

// Event is one change in the Client's connections, given to Config.OnEvent. It is plain data, made to be counted
// or logged as is (kind, address and role as labels): the same event comes once per connection concerned, so a
// restarted server with two pooled connections, the latency lane and a pub/sub connection gives four EventLost
// and four EventReconnected.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Addr is the server's host:port (for EventFailover, the new master's).
	Addr string
	// Prev is the old master of an EventFailover, "" otherwise.
	Prev string
	// Role is the connection's role: RoleCommand, RolePubSub or RoleSentinel ("" for EventFailover).
	Role string
	// Err is why the connection closed, for EventLost; nil otherwise.
	Err error
	// Time is when it happened.
	Time time.Time
}

// emit gives e to Config.OnEvent, if any, stamped with the time, recovering a panic (logged): the hook runs on
// the Client's own goroutines, which must survive a caller's bug.
func (c *Client) emit(e Event) {
	if c.cfg.OnEvent == nil {
		return
	}
	e.Time = time.Now()
	defer func() {
		if r := recover(); r != nil {
			c.cfg.Logger.Error("conn: panic in Config.OnEvent (it runs on the Client's goroutines and must not panic)",
				"event", e.Kind.String(), "panic", r)
		}
	}()
	c.cfg.OnEvent(e)
}

// role is the Event.Role of the keeper's connections.
func (s *keeper) role() string {
	switch {
	case s.ps == nil:
		return RoleCommand
	case s.ep.sentinel:
		return RoleSentinel
	}
	return RolePubSub
}
