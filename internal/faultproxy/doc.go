// Package faultproxy is a fault-injecting TCP proxy for tests: it listens on
// a loopback port and forwards every connection to one target (a real
// redis-server), and on command it adds latency, stalls a direction, drops or
// resets the current connections, cuts connections after a number of bytes
// (a reply cut mid-frame, a pipeline dropped halfway), refuses new
// connections, or black-holes everything for a while (a network partition).
//
// # Why not toxiproxy
//
// github.com/Shopify/toxiproxy/v2 v2.12.0 was checked as an embedded library:
// it adds 17 modules to go.mod (Prometheus client, protobuf, gorilla/mux,
// zerolog, tomb.v1, klauspost/compress...) and raises golang.org/x/sys, which
// gnet also depends on, and its embedding API wants an ApiServer with a metrics
// container. Everything the tests need fits in a few hundred lines here.
//
// # Model
//
// Each accepted connection is a link with two directions, Upstream (client to
// server) and Downstream (server to client). Each direction has a reader
// goroutine that reads into chunks stamped with their arrival time and a
// writer goroutine that delivers each chunk at arrival + latency, unless the
// direction is stalled or the proxy is partitioned, in which case the chunk
// waits (nothing is lost or reordered; once the queue is full the reader
// stops reading and TCP backpressure reaches the sender, as with a stalled
// peer). Fault settings change at any time and apply to queued chunks.
//
// During a partition new connections are accepted but not dialled upstream
// until the partition ends, as a SYN retransmitted after the network heals.
package faultproxy
