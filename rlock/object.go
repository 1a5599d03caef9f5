package rlock

// object is what every handle of the package shares — locks, semaphores, latches, rate limiters: its client, its
// name (its Redis key), and the shard that keeps its local state (held locks, waiter queues), chosen by the name
// so that a lock's holds and its waiters meet under one mutex. Handles are cheap values; the client keeps the
// state.
type object struct {
	c    *Client
	name string
	sh   *shard
}

func (c *Client) newObject(name string) object { return object{c: c, name: name, sh: c.shard(name)} }

// check validates the handle and the client for a call: bad input is reported before anything is sent.
func (o *object) check(op string) error {
	if o.name == "" {
		return nameError(op)
	}
	if o.c.closed.Load() {
		return ErrClosed
	}
	return nil
}
