// Package conn is locksmith's Redis transport: an auto-pipelined RESP2 client on gnet event loops, with a pool of a
// few connections per server, scripts run by EVALSHA, reference-counted pub/sub, TLS, and reconnection. It is the
// only package that imports gnet.
//
// # Using it
//
//	c, err := conn.New(conn.Config{Addr: "127.0.0.1:6379"}) // or conn.ParseURL("redis://...")
//	f := c.Eval(ctx, script, []string{key}, arg)             // never blocks: a future
//	v, err := f.Get(ctx)                                     // blocks until the reply (or ctx)
//	defer c.Close()
//
// Every call returns a future (package future) at once; the blocking form is the call plus Get. Error replies
// complete the future with a *resp.ServerError; connection failures with a *ConnError (errors.Is ErrConnLost: the
// command may have run; ErrUnavailable: it was never sent); Close with ErrClosed.
//
// # Pipelining
//
// Many goroutines' commands flow through a few connections as deep pipelines. A caller encodes its command
// directly into its connection's outbound buffer and pushes a pending entry on the connection's FIFO, both under
// one short mutex, so bytes and entries stay in the same order; the event loop decodes replies (OnTraffic) and
// completes entries from the head of the FIFO. Completing a command allocates nothing beyond the caller's promise:
// entries are stored by value in a ring, replies are decoded into reused scratch space, and an EVALSHA is copied
// into a per-connection byte log (for a resend after NOSCRIPT) instead of retaining the caller's slices, which
// would make them escape.
//
// # Flushing
//
// gnet does not coalesce writes (one task and one syscall per AsyncWrite), so batching is ours. Three triggers:
//
//   - A caller that finds its connection idle (nothing written awaits a reply, no flush pending) writes on the
//     socket itself: a non-blocking write under the connection's mutex, no event-loop hand-off (any remainder
//     goes to the loop). This is the sequential (G=1) path.
//   - Otherwise, with FlushEager (the default), a caller that finds no flush pending marks one and rings its
//     loop's doorbell (a socketpair enrolled into the loop: one byte, no allocation, unlike gnet's Wake);
//     everything appended until the loop answers leaves in that one write.
//   - Every loop turn that processed replies ends with one write of everything appended meanwhile; callers woken by
//     those completions see the flush pending and append without ringing.
//
// FlushOnReply drops the second trigger: commands appended while replies are awaited wait for the turn that
// processes them. It makes fewer, larger writes (32 vs 10 commands per write at 64 goroutines, one connection)
// but the server then idles for a round trip per batch; measured on 2 cores at 64 goroutines: FlushEager 93-111 k
// pairs/s with the server at 0.85-0.93 cores, FlushOnReply 47-67 k pairs/s at 0.63-0.74 cores (same runs,
// alternated, otherwise quiet machine). Hence the default.
//
// # Pool
//
// Each server gets PoolSize event-loop connections; a command goes to the open connection with the fewest commands
// pending (least-pending: a connection stuck behind a slow reply stops receiving work), ties to the lowest, so a
// caller keeps a warm connection. There is never a connection or a goroutine per call.
//
// # Latency lane
//
// A sequential caller (one goroutine: issue, wait, issue) pays for the event loop on every round trip: the loop
// thread sleeps in epoll_wait between replies, and on the virtual machines measured here waking it costs 10-60 µs
// (the vCPU idles), while a goroutine reading a net.Conn is woken by Go's netpoller, whose threads spin briefly
// before sleeping. Measured p50 round trips (PING, EVALSHA) through an event loop: 30-90 µs, against 19-23 µs for a
// plain net.Conn write+read. Writing on the socket from the caller (see Flushing) removes the write-side hand-off,
// not this one.
//
// So each plain-TCP server also gets one extra connection, the latency lane, read by a goroutine on Go's netpoller
// (the same stream transport as TLS connections). pick sends a command to the lane only when the lane and every
// event-loop connection have nothing in flight, i.e. when the Client is idle: sequential use. Any concurrency moves
// commands to the event loops, which batch. With the lane, the p50 round trip was 27-33 µs for PING and 36-42 µs
// for EVALSHA, against 19-21 and 22-24 µs for net.Conn in the same interleaved runs (ratios 1.3-1.6 and 1.5-1.9):
// the reply is read by the lane's goroutine, not the caller's (the API returns a future, so the caller cannot be
// the reader), which costs a goroutine hand-off and, when the server takes longer than the runtime's spinning
// threads wait, a thread wake-up. Closing the gap needs a spinning reader, which costs most of a core during
// sequential use; not done. Config.DisableLatencyLane removes the lane.
//
// # Failures
//
//   - A dropped connection (EOF, reset, a protocol error, a response timeout) fails every queued and in-flight
//     command at once with a *ConnError wrapping the cause (errors.Is ErrConnLost; a *resp.ProtocolError or
//     ErrTimeout is reachable with errors.As / errors.Is).
//   - Its slot reconnects: at once when the connection had lived at least ReconnectMaxBackoff, else after a
//     jittered exponential backoff (ReconnectMinBackoff doubling up to ReconnectMaxBackoff) scheduled on the timing
//     wheel; the dial, TLS and AUTH/SELECT/CLIENT SETNAME/PING handshake run on a short-lived goroutine per attempt.
//   - Commands while disconnected: a command goes to an open connection if the server has one; else it is queued on
//     a connection attempt in progress (and fails with the attempt's error if it fails); else, while the server is
//     known unreachable (between failed attempts), it fails at once with a *ConnError matching ErrUnavailable. So
//     nothing waits for a server known to be down, and a command issued during a quick reconnect is not lost.
//   - Context: when a command's context ends first, its future completes with ctx.Err(); the reply is still read
//     in order and discarded, so the pipeline stays in step (context.AfterFunc, registered only for contexts that
//     can end).
//   - Response timeout: one periodic check per connection on the wheel (not a timer per command) resets a
//     connection whose reply counter did not move for ResponseTimeout while written commands awaited replies
//     (replies are FIFO, so that is exactly "the oldest reply is late"). The same check sends a PING after
//     PingInterval of idleness, so a dead peer is found even without traffic.
//   - Close fails everything pending with ErrClosed, stops the loops and waits for every goroutine it started.
//
// # Cost
//
// One allocation per command, the promise, when the context cannot end (context.Background, or
// context.WithoutCancel(ctx) with the wait bounded by Get(ctx) instead): the variadic arguments stay on the
// caller's stack, entries live by value in the FIFO ring, and replies decode into reused scratch space. A context
// that can end adds a context.AfterFunc registration (3 more allocations). No goroutine per command, no timer per
// command, one write syscall per batch.
//
// # Scripts
//
// A Script carries its SHA-1, computed locally; Eval sends EVALSHA. On NOSCRIPT (a restarted or flushed server)
// the connection sends SCRIPT LOAD (once per script until its reply) followed by the same EVALSHA bytes, on the same
// connection, so the resend finds the script loaded; the caller never sees NOSCRIPT.
//
// # Pub/sub
//
// Each server gets one dedicated pub/sub connection (RESP2 requires it), created by the first Subscribe.
// Subscriptions are reference-counted per channel: a second handler sends nothing, the last Close sends
// UNSUBSCRIBE. Each (UN)SUBSCRIBE names one channel, so its confirmation completes in FIFO order like any command,
// and pushed messages are dispatched between them. After a reconnect every channel is subscribed again and its
// handlers receive KindResubscribed (messages may have been missed: re-check state).
//
// # Where callbacks run
//
// Pub/sub handlers and the callbacks of command futures (future.OnComplete, Then, Compose) run on the goroutine
// that completes them: an event loop, a stream reader goroutine, the timer's worker (when a response timeout or a
// dropped connection fails commands), a context.AfterFunc goroutine (cancellation), or the goroutine calling Close.
// They must not block: every other connection of the loop waits for them. They may issue commands and subscribe
// (nothing is locked while they run), but must not call Close. A panicking callback or handler is recovered and
// logged.
//
// # TLS
//
// gnet has no TLS. A rediss:// connection (Config.TLS non-nil) runs over crypto/tls with a reader goroutine and a
// writer goroutine (the stream transport, shared with the latency lane); the pipeline (buffer, FIFO, flush rules,
// the caller's direct write of a small batch on an idle connection) is the same code.
//
// # Measured (2-core VM shared with other work; figures move between runs, ratios less)
//
//	go test ./conn -run '^$' -bench BenchmarkEvalPairs -benchtime 3s -count 3
//	go test ./conn -run '^$' -bench BenchmarkRoundTripG1 -benchtime 20000x -count 5
//
// BenchmarkEvalPairs runs the acquire/release EVALSHA pairs of ../shared/BENCHMARKS.md on distinct keys. On
// 2026-11-22 with 0.5-1.3 cores taken by other processes: G=64: 46-89 k pairs/s, 3.6-4.3 µs client CPU per pair,
// 13.5-14.3 commands per write syscall; G=1024: 75-83 k pairs/s, 4.5-4.8 µs per pair, 20-24 commands per write;
// one allocation per command (allocs/op counts a pair). Raw rueidis v1.0.79 EVALSHA of the same scripts, alternated
// with conn in one process (a throwaway program, not in this repository): conn made 1.1-1.7x its pairs/s at G=64
// and 1.4-1.5x at G=1024, with 0.28-0.32x its client CPU per pair at G=64 and 0.39-0.52x at G=1024.
//
// # Topology
//
// The Client routes each command to a node (a pool and a pub/sub connection per server). Standalone has one node;
// cluster (slots, MOVED/ASK) and sentinel (master switch) will add routing above nodes without changing the API.
package conn
