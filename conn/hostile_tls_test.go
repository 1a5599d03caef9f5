package conn_test

import (
	"testing"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
)

// Over TLS every connection runs on the stream transport (a reader and a writer goroutine on Go's netpoller), with
// crypto/tls's own record buffer under the decoder: a hostile reply is refused there as on plain TCP, with the
// same typed error, before the response timeout and with the heap's peak within heapBound, and the Client then
// serves commands from a real TLS redis-server reached through the fake.
func TestHostileRepliesOverTLSAreRefusedWithinTheLimits(t *testing.T) {
	srv := redistest.Start(t, redistest.WithTLS())
	for _, hc := range hostileCases {
		t.Run(hc.name, func(t *testing.T) {
			f := startFakeTLS(t, srv, hostileOnce(hc, relayTLS(t, srv.Addr(), srv.TLSConfig())))
			c := newClient(t, conn.Config{Addr: f.addr(), TLS: srv.TLSConfig(), PoolSize: 1})
			refuseHostileGet(t, c, hc)
		})
	}
}
