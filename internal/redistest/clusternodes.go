package redistest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id       string
	port     int
	master   bool
	masterID string // for a replica; "-" for a master
	myself   bool
	failed   bool // flags fail or fail? (PFAIL)
	linkUp   bool // link-state connected
	slots    [][2]int
}

// parseClusterNodes parses CLUSTER NODES output:
// <id> <ip:port@cport[,hostname]> <flags> <master> <ping> <pong> <epoch> <link> <slot>...
// Slots under migration ("[slot->-id]", "[slot-<-id]") are skipped: they
// stay owned by the node that lists them as a plain range.
func parseClusterNodes(text string) ([]clusterNode, error) {
	var out []clusterNode
	for line := range strings.SplitSeq(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("redistest: CLUSTER NODES line %q", line)
		}
		hostPort, _, _ := strings.Cut(f[1], "@")
		i := strings.LastIndexByte(hostPort, ':')
		if i < 0 {
			return nil, fmt.Errorf("redistest: CLUSTER NODES address %q", f[1])
		}
		port, err := strconv.Atoi(hostPort[i+1:])
		if err != nil {
			return nil, fmt.Errorf("redistest: CLUSTER NODES address %q", f[1])
		}
		flags := strings.Split(f[2], ",")
		n := clusterNode{
			id:       f[0],
			port:     port,
			master:   slices.Contains(flags, "master"),
			masterID: f[3],
			myself:   slices.Contains(flags, "myself"),
			failed:   slices.Contains(flags, "fail") || slices.Contains(flags, "fail?"),
			linkUp:   f[7] == "connected",
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue
			}
			lo, hi, isRange := strings.Cut(s, "-")
			a, err := strconv.Atoi(lo)
			if err != nil {
				return nil, fmt.Errorf("redistest: CLUSTER NODES slot %q", s)
			}
			b := a
			if isRange {
				if b, err = strconv.Atoi(hi); err != nil {
					return nil, fmt.Errorf("redistest: CLUSTER NODES slot %q", s)
				}
			}
			n.slots = append(n.slots, [2]int{a, b})
		}
		out = append(out, n)
	}
	return out, nil
}

// owns reports whether the node serves slot.
func (n clusterNode) owns(slot int) bool {
	for _, r := range n.slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// slotCount returns how many slots the node serves.
func (n clusterNode) slotCount() int {
	c := 0
	for _, r := range n.slots {
		c += r[1] - r[0] + 1
	}
	return c
}

// topologyKey renders the parts of a node view that all nodes must agree on
// (who is master of what, which slots), for comparing views.
func topologyKey(nodes []clusterNode) string {
	lines := make([]string, 0, len(nodes))
	for _, n := range nodes {
		role := "replica-of-" + n.masterID
		if n.master {
			role = "master"
		}
		lines = append(lines, fmt.Sprintf("%s %d %s %v", n.id, n.port, role, n.slots))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
