package conn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/locksmith-go/locksmith/resp"
)

// shardInfo is one master with its replicas and slot ranges, as a topology query reports it.
type shardInfo struct {
	master   string   // host:port, "" when the shard has no usable master
	replicas []string // host:port of each replica
	ranges   [][2]int // inclusive slot ranges
}

// slotMap is a cluster's slot map as one node sees it.
type slotMap struct {
	shards []shardInfo
}

// addrs returns every node address of t: masters first, then replicas.
func (t *slotMap) addrs() []string {
	var out []string
	for _, s := range t.shards {
		if s.master != "" {
			out = append(out, s.master)
		}
	}
	for _, s := range t.shards {
		out = append(out, s.replicas...)
	}
	return out
}

// fetchFrom asks the node at addr for the slot map: CLUSTER SHARDS while the servers know it (Redis 7) and let the
// user run it, else CLUSTER SLOTS (the first "unknown subcommand" or NOPERM switches the Client to SLOTS for good: a
// user whose ACL allows +cluster|slots alone is served as well). A user refused both gets an error matching ErrAuth
// that names the rules to grant (slotMapRefusal). With probe it also asks COMMAND INFO SSUBSCRIBE and reports
// whether the server has sharded pub/sub. It blocks for at most ctx.
func (cl *cluster) fetchFrom(ctx context.Context, addr string, probe bool) (t *slotMap, sharded bool, err error) {
	cfg := &cl.c.cfg
	for {
		shards := cl.useShards.Load()
		cmds := [][]string{{"CLUSTER", "SLOTS"}}
		if shards {
			cmds[0][1] = "SHARDS"
		}
		if probe {
			cmds = append(cmds, []string{"COMMAND", "INFO", "SSUBSCRIBE"})
		}
		vs, err := query(ctx, cfg, addr, false, cmds...)
		if err != nil {
			return nil, false, err
		}
		if v := vs[0]; v.Type == resp.ErrorReply {
			se := resp.NewServerError(v.Str)
			if shards && (se.Prefix == "NOPERM" || strings.Contains(strings.ToLower(se.Message), "unknown subcommand")) {
				cl.useShards.Store(false)
				continue
			}
			if se.Prefix == "NOPERM" {
				return nil, false, &slotMapRefusal{addr: addr, reply: se}
			}
			if strings.Contains(se.Message, "cluster support disabled") {
				return nil, false, fmt.Errorf("%w: %s is not a cluster node (%s); use Addr or SentinelAddrs for it",
					ErrInvalidConfig, addr, se.Message)
			}
			return nil, false, fmt.Errorf("%s: %w", addr, se)
		}
		host, _, _ := net.SplitHostPort(addr)
		if shards {
			t, err = parseShards(&vs[0], host, cfg.TLS != nil)
		} else {
			t, err = parseSlots(&vs[0], host)
		}
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", addr, err)
		}
		if probe {
			v := &vs[1]
			sharded = v.Type == resp.Array && len(v.Elems) == 1 && v.Elems[0].Type == resp.Array && !v.Elems[0].Null
			if v.Type == resp.ErrorReply {
				// Without the answer the Client cannot tell whether the servers have sharded pub/sub, and falls
				// back to SUBSCRIBE and PUBLISH, which Redisson's clients on the same cluster may not use.
				cfg.Logger.Warn("conn: the server refused COMMAND INFO, so sharded pub/sub is not used; "+
					"grant the user +command|info to detect it", "addr", addr, "reply", v.Str)
			}
		}
		return t, sharded, nil
	}
}

// slotMapRefusal is the error of a slot-map query that the user's ACL refused (NOPERM to CLUSTER SLOTS, after
// CLUSTER SHARDS was refused or unknown). It matches ErrAuth and the server's *resp.ServerError: no retry will
// help until someone grants the rules its message names.
type slotMapRefusal struct {
	addr  string
	reply *resp.ServerError
}

func (e *slotMapRefusal) Error() string {
	return "conn: " + e.addr + " refused the cluster's slot map: " + strconv.QuoteToASCII(e.reply.Message) +
		"; grant the user +cluster|shards (Redis 7) or +cluster|slots on every node (" + ErrAuth.Error() + ")"
}

// Unwrap returns ErrAuth and the server's reply.
func (e *slotMapRefusal) Unwrap() []error { return []error{ErrAuth, e.reply} }

// fetch asks the known nodes in turn (masters that are up, then the other masters and replicas of the last map,
// then the seeds), each bounded by DialTimeout, and with probe also whether they have sharded pub/sub (see
// fetchFrom); it returns the first map whose masters the Client can all reach. During a failover the nodes learn
// the promotion at different moments (the promoted replica first), so while the maps it gets name an unreachable
// master it asks the next node, and returns the map with the fewest such masters. It blocks until then or until the
// Client closes.
func (cl *cluster) fetch(probe bool) (*slotMap, bool, error) {
	var errs []error
	var best *slotMap
	bestSuspects, bestSharded := 0, false
	for _, addr := range cl.candidates() {
		ctx, cancel := context.WithTimeout(cl.c.ctx, cl.c.cfg.DialTimeout)
		t, sharded, err := cl.fetchFrom(ctx, addr, probe)
		cancel()
		if err != nil {
			errs = append(errs, err)
			if cl.c.ctx.Err() != nil {
				break
			}
			continue
		}
		n := cl.suspects(t)
		if n == 0 {
			return t, sharded, nil
		}
		if best == nil || n < bestSuspects {
			best, bestSuspects, bestSharded = t, n, sharded
		}
	}
	if best != nil {
		return best, bestSharded, nil
	}
	return nil, false, errors.Join(errs...)
}

// candidates lists the addresses to ask for the slot map, best first, without duplicates.
func (cl *cluster) candidates() []string {
	cl.mu.Lock()
	var up, rest []string
	for addr, n := range cl.nodes {
		if n.up() {
			up = append(up, addr)
		} else {
			rest = append(rest, addr)
		}
	}
	all := append(append(append(up, rest...), cl.known...), cl.seeds...)
	cl.mu.Unlock()
	seen := make(map[string]bool, len(all))
	out := all[:0:0]
	for _, a := range all {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// parseShards reads a CLUSTER SHARDS reply: an array of shards, each a flat field/value array with "slots" (a flat
// list of range bounds) and "nodes" (each a flat field/value array: ip, endpoint, port, tls-port, role, health...).
// host is the queried node's host, used when a node does not know its own address.
func parseShards(v *resp.Value, host string, useTLS bool) (*slotMap, error) {
	if v.Type != resp.Array {
		return nil, fmt.Errorf("CLUSTER SHARDS: unexpected reply %s", v.String())
	}
	t := &slotMap{}
	for _, sv := range v.Elems {
		var sh shardInfo
		fields := pairs(&sv)
		slots := fields["slots"]
		if slots == nil || len(slots.Elems)%2 != 0 {
			return nil, fmt.Errorf("CLUSTER SHARDS: shard without a valid slots list: %s", sv.String())
		}
		for i := 0; i < len(slots.Elems); i += 2 {
			lo, hi := intOf(&slots.Elems[i]), intOf(&slots.Elems[i+1])
			if lo < 0 || hi < lo || hi >= SlotCount {
				return nil, fmt.Errorf("CLUSTER SHARDS: bad slot range %d-%d", lo, hi)
			}
			sh.ranges = append(sh.ranges, [2]int{lo, hi})
		}
		if nodes := fields["nodes"]; nodes != nil {
			for _, nv := range nodes.Elems {
				nf := pairs(&nv)
				addr := nodeAddr(nf, host, useTLS)
				if addr == "" {
					continue
				}
				role, health := strOf(nf["role"]), strOf(nf["health"])
				switch {
				case role == "master" && (sh.master == "" || health == "online"):
					sh.master = addr
				case role != "master":
					sh.replicas = append(sh.replicas, addr)
				}
			}
		}
		t.shards = append(t.shards, sh)
	}
	return t, nil
}

// nodeAddr builds host:port for a CLUSTER SHARDS node: its endpoint (or ip) and its port (tls-port over TLS).
func nodeAddr(f map[string]*resp.Value, host string, useTLS bool) string {
	h := strOf(f["endpoint"])
	if h == "" || h == "?" {
		h = strOf(f["ip"])
	}
	if h == "?" {
		return ""
	}
	if h == "" {
		h = host
	}
	port := intOf(f["port"])
	if useTLS {
		if tp := intOf(f["tls-port"]); tp > 0 {
			port = tp
		}
	}
	if port <= 0 {
		return ""
	}
	return net.JoinHostPort(h, strconv.Itoa(port))
}

// parseSlots reads a CLUSTER SLOTS reply: an array of [start, end, master, replicas...], each node an array
// [ip, port, id, ...].
func parseSlots(v *resp.Value, host string) (*slotMap, error) {
	if v.Type != resp.Array {
		return nil, fmt.Errorf("CLUSTER SLOTS: unexpected reply %s", v.String())
	}
	byMaster := map[string]int{}
	t := &slotMap{}
	for _, e := range v.Elems {
		if e.Type != resp.Array || len(e.Elems) < 3 {
			return nil, fmt.Errorf("CLUSTER SLOTS: bad entry %s", e.String())
		}
		lo, hi := intOf(&e.Elems[0]), intOf(&e.Elems[1])
		if lo < 0 || hi < lo || hi >= SlotCount {
			return nil, fmt.Errorf("CLUSTER SLOTS: bad slot range %d-%d", lo, hi)
		}
		master := slotsNodeAddr(&e.Elems[2], host)
		i, ok := byMaster[master]
		if !ok {
			i = len(t.shards)
			byMaster[master] = i
			sh := shardInfo{master: master}
			for k := 3; k < len(e.Elems); k++ {
				if r := slotsNodeAddr(&e.Elems[k], host); r != "" {
					sh.replicas = append(sh.replicas, r)
				}
			}
			t.shards = append(t.shards, sh)
		}
		t.shards[i].ranges = append(t.shards[i].ranges, [2]int{lo, hi})
	}
	return t, nil
}

// slotsNodeAddr builds host:port from a CLUSTER SLOTS node array ("" for an unknown endpoint "?").
func slotsNodeAddr(v *resp.Value, host string) string {
	if v.Type != resp.Array || len(v.Elems) < 2 {
		return ""
	}
	h := v.Elems[0].Str
	if h == "?" {
		return ""
	}
	if h == "" {
		h = host
	}
	port := intOf(&v.Elems[1])
	if port <= 0 {
		return ""
	}
	return net.JoinHostPort(h, strconv.Itoa(port))
}

// pairs reads a flat field/value array into a map (values by pointer into v).
func pairs(v *resp.Value) map[string]*resp.Value {
	m := make(map[string]*resp.Value, len(v.Elems)/2)
	for i := 0; i+1 < len(v.Elems); i += 2 {
		m[v.Elems[i].Str] = &v.Elems[i+1]
	}
	return m
}

// intOf returns an integer reply, or a bulk string holding one; -1 otherwise.
func intOf(v *resp.Value) int {
	if v == nil {
		return -1
	}
	if v.Type == resp.Integer {
		return int(v.Int)
	}
	n, err := strconv.Atoi(v.Str)
	if err != nil || v.Type == resp.Array || v.Null {
		return -1
	}
	return n
}

// strOf returns a string reply's text ("" for nil or another type).
func strOf(v *resp.Value) string {
	if v == nil || v.Type == resp.Array {
		return ""
	}
	return v.Str
}
