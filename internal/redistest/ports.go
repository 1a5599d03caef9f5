package redistest

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Ports are drawn from [portFloor, ephemeral low bound), with room for the
// cluster bus port (port+clusterBusOffset) when asked. Below the ephemeral
// range no outgoing connection can hold the port (the kernel picks local ports
// of connect() from that range), so a port stays ours across Kill/Restart.
const (
	portFloor        = 11000
	clusterBusOffset = 10000 // Redis's cluster bus listens on port+10000
	defaultEphemeral = 32768 // Linux default when /proc is unreadable
	portPickAttempts = 200
)

// ephemeralLow returns the lower bound of the kernel's ephemeral port range.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return defaultEphemeral
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return defaultEphemeral
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= 0 {
		return defaultEphemeral
	}
	return n
}

// pickPortFunc is pickPort; tests replace it to exercise the retry on a
// taken port.
var pickPortFunc = pickPort

// pickPort returns a loopback port that was free a moment ago (and whose bus
// port is free too when withBus is set). Another process may still take it
// before redis-server binds it; the caller retries on bind failure.
func pickPort(withBus bool) (int, error) {
	lo, hi := portFloor, ephemeralLow()
	if withBus {
		hi -= clusterBusOffset
	}
	if hi-lo < 1000 { // an unusual ephemeral range: fall back to a wide band
		lo, hi = 1024, 65535
		if withBus {
			hi -= clusterBusOffset
		}
	}
	var lastErr error
	for range portPickAttempts {
		p := lo + rand.IntN(hi-lo)
		if lastErr = probePort(p); lastErr != nil {
			continue
		}
		if withBus {
			if lastErr = probePort(p + clusterBusOffset); lastErr != nil {
				continue
			}
		}
		return p, nil
	}
	return 0, lastErr
}

// probePort reports whether 127.0.0.1:port can be bound right now.
func probePort(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}
