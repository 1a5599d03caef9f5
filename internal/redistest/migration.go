package redistest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// Migration moves one hash slot from one master to another by hand, with the steps redis-cli --cluster reshard
// runs, so a test can stop between them: StartMigration (IMPORTING on the destination, MIGRATING on the source),
// MoveKeys or MoveAll (MIGRATE), Finish (the slot assigned to the destination on every master). While it is open,
// the source answers ASK for keys it no longer has and TRYAGAIN for multi-key commands split between the nodes.
type Migration struct {
	c            *Cluster
	slot         int
	src, dst     *Server
	srcID, dstID string
}

// StartMigration opens the migration of slot from src to dst. It blocks for a few round trips, bounded by ctx.
func (c *Cluster) StartMigration(ctx context.Context, slot int, src, dst *Server) (*Migration, error) {
	m := &Migration{c: c, slot: slot, src: src, dst: dst}
	var err error
	if m.srcID, err = NodeID(ctx, src); err != nil {
		return nil, err
	}
	if m.dstID, err = NodeID(ctx, dst); err != nil {
		return nil, err
	}
	s := strconv.Itoa(slot)
	if err := do(ctx, dst, "CLUSTER", "SETSLOT", s, "IMPORTING", m.srcID); err != nil {
		return nil, err
	}
	if err := do(ctx, src, "CLUSTER", "SETSLOT", s, "MIGRATING", m.dstID); err != nil {
		return nil, err
	}
	return m, nil
}

// MoveKeys migrates keys (of the slot) from the source to the destination.
func (m *Migration) MoveKeys(ctx context.Context, keys ...string) error {
	args := append([]string{"MIGRATE", "127.0.0.1", strconv.Itoa(m.dst.Port()), "", "0", "5000", "KEYS"}, keys...)
	return do(ctx, m.src, args...)
}

// MoveAll migrates the slot's keys still on the source, batch at a time, until none is left, calling between
// (if not nil) after each batch; keys created meanwhile go to the destination (ASK). It reports how many keys it
// moved.
func (m *Migration) MoveAll(ctx context.Context, batch int, between func()) (int, error) {
	moved := 0
	for {
		keys, err := m.src.DoStrings(ctx, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(m.slot), strconv.Itoa(batch))
		if err != nil {
			return moved, fmt.Errorf("redistest: GETKEYSINSLOT on %s: %w", m.src.Addr(), err)
		}
		if len(keys) == 0 {
			return moved, nil
		}
		if err := m.MoveKeys(ctx, keys...); err != nil {
			return moved, err
		}
		moved += len(keys)
		if between != nil {
			between()
		}
	}
}

// Finish assigns the slot to the destination on every master, the destination first and then the source, as
// redis-cli does, which ends the migration.
func (m *Migration) Finish(ctx context.Context) error {
	ms, err := m.c.Masters(ctx)
	if err != nil {
		return err
	}
	order := []*Server{m.dst, m.src}
	for _, s := range ms {
		if s != m.src && s != m.dst {
			order = append(order, s)
		}
	}
	for _, s := range order {
		if err := do(ctx, s, "CLUSTER", "SETSLOT", strconv.Itoa(m.slot), "NODE", m.dstID); err != nil {
			return err
		}
	}
	return nil
}

// OtherMaster returns a running master other than not.
func (c *Cluster) OtherMaster(ctx context.Context, not *Server) (*Server, error) {
	ms, err := c.Masters(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if m != not {
			return m, nil
		}
	}
	return nil, errors.New("redistest: no other running master")
}

// NodeID returns s's cluster node id (CLUSTER MYID).
func NodeID(ctx context.Context, s *Server) (string, error) {
	id, err := s.DoString(ctx, "CLUSTER", "MYID")
	if err != nil {
		return "", fmt.Errorf("redistest: CLUSTER MYID on %s: %w", s.Addr(), err)
	}
	return id, nil
}

// do runs an admin command, naming the command and the server in its error.
func do(ctx context.Context, s *Server, args ...string) error {
	if _, err := s.Do(ctx, args...); err != nil {
		return fmt.Errorf("redistest: %v on %s: %w", args, s.Addr(), err)
	}
	return nil
}
