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
// command may have run; ErrUnavailable: it was never sent, retry later; ErrAuth or ErrInvalidConfig: it was never
// sent because the server refused the connection's credentials or configuration, and retrying will not help);
// Close with ErrClosed. No error and no log line holds a password: URLs are quoted as RedactURL shows them.
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
//     everything appended until the loop answers leaves in that one write. Not when a deep pipeline (32 commands
//     or more) awaits its replies on the connection: the server has that much to run before it could read the
//     new command, and the turn that reads those replies writes it with everything else appended meanwhile. At
//     high concurrency this makes writes several times larger (150 to 200 commands instead of about 30 at 1024
//     goroutines), which costs the server and the client fewer system calls per command.
//   - Every loop turn that processed replies ends with one write of everything appended meanwhile; callers woken by
//     those completions see the flush pending and append without ringing.
//
// FlushOnReply drops the second trigger: commands appended while replies are awaited wait for the turn that
// processes them. It makes fewer, larger writes, but the server then idles for a round trip per batch: at 64
// goroutines it kept the server less busy and made roughly half to two thirds of FlushEager's pairs per second
// (bench/README.md, "conn"). Hence the default.
//
// # Pool
//
// Each server gets PoolSize event-loop connections; a command goes to the open connection with the fewest commands
// pending (least-pending: a connection stuck behind a slow reply stops receiving work), ties to the lowest, so a
// caller keeps a warm connection. There is never a connection or a goroutine per call.
//
// # Sharing a small machine with redis-server
//
// The event loop completes replies on one thread and wakes the callers, which Go runs on any free core. When the
// server runs on the same few cores (a 2-core VM, a benchmark box), those callers preempt it and every command's
// state crosses between the cores' caches. A process that can leave the server a core (GOMAXPROCS = cores - 1) then
// does more with less: on 2 cores, with 1024 goroutines each locking and unlocking a key of its own, the client
// spent about a third less CPU per pair at GOMAXPROCS=1, made more pairs per second in most runs that measured both
// side by side and kept the server busier (bench/README.md, "conn"). With the server on another machine, keep Go's
// default.
//
// # Latency lane
//
// A sequential caller (one goroutine: issue, wait, issue) pays for the event loop on every round trip: the loop
// thread sleeps in epoll_wait between replies, and on the virtual machines measured here waking it costs 10-60 µs
// (the vCPU idles), while a goroutine reading a net.Conn is woken by Go's netpoller. Writing on the socket from the
// caller (see Flushing) removes the write-side hand-off, not this one.
//
// So each plain-TCP server also gets one extra connection, the latency lane, on Go's netpoller (the stream
// transport of TLS connections). pick sends a command to the lane only when the lane and every event-loop
// connection have nothing in flight, i.e. when the Client is idle: sequential use. Any concurrency moves commands to
// the event loops, which batch. Config.DisableLatencyLane removes the lane.
//
// The caller reads its own reply. A command sent on the lane gets the lane as its future's driver
// (future.Driver): the caller's Get, instead of parking until another goroutine has read the reply, reads the
// socket itself (lane.go), so the goroutine the netpoller wakes when the reply arrives is the one that waits —
// exactly a plain net.Conn write+read loop. Reading every reply on the lane's own goroutine and handing it to the
// caller would add a goroutine wake-up per command (and, on 2 cores, a thread wake-up for the idle P); reading it in
// Get keeps the sequential round trip's median within a few percent of a net.Conn loop's (BenchmarkRoundTripG1;
// bench/README.md, "conn").
//
// One goroutine reads at a time (the read role, under a mutex), and every reply is read by someone:
//
//   - a Get whose future's command went over the lane drives: it reads and completes replies, in FIFO order, until
//     its own future is complete, its context ends, or nothing is due; it then gives the role back;
//   - a Get that finds the role taken parks as on an event-loop connection, and is woken by whoever reads;
//   - replies no Get will drive go to the lane's background goroutine, which reads as on any stream connection:
//     commands without a driver (sent by the router, the health check, SendAndWait), futures observed with
//     OnComplete or Done (future tells the driver: Unattended), the rest of the queue when a driver stops (commands
//     of callers who raced onto the lane, or the driver's own reply when its context ended first). The background
//     reader gives the role back once nothing is due and a Get asked for it, so a caller alternating both styles
//     pays one hand-off per switch, not per command;
//   - a reply that nobody observes at all (a future dropped, or polled with IsDone) is read by the health check's
//     fallback after one check interval without replies.
//
// Context: a future completed by another goroutine (its command's context ended: see Failures) interrupts a Get
// driving for it (future calls Driver.Completed; the read deadline is moved to the past). A Get with the command's
// own context relies on that (future.Promise.CancelledBy); a Get with another context that can end registers a
// context.AfterFunc that interrupts its read the same way. Either way Get returns at once, and the late reply is
// handed to the background reader, which reads and discards it in order.
//
// Nobody reads an idle lane, so nothing would notice that the server closed it (a restart, its idle timeout) until a
// command is written on it, which would then fail with ErrConnLost ("may have run") although it never reached a
// server. pick therefore probes a lane unread for more than a millisecond (one recv MSG_PEEK|MSG_DONTWAIT, about a
// microsecond) and resets it if closed; a tight sequential loop is never probed. Where no such peek exists (see
// Platforms), such a command goes to an event-loop connection instead while the lane's background reader reads the
// socket, which finds a close at once.
//
// # Failures
//
//   - A dropped connection (EOF, reset, a protocol error, a response timeout) fails every queued and in-flight
//     command at once with a *ConnError wrapping the cause (errors.Is ErrConnLost; a *resp.ProtocolError or
//     ErrTimeout is reachable with errors.As / errors.Is).
//   - Its keeper reconnects: at once when the connection had lived at least ReconnectMaxBackoff, else after a
//     jittered exponential backoff (ReconnectMinBackoff doubling up to ReconnectMaxBackoff) scheduled on the timing
//     wheel; the dial, TLS and AUTH/SELECT/CLIENT SETNAME/PING handshake run on a short-lived goroutine per attempt.
//   - Commands while disconnected: a command goes to an open connection if the server has one; else it is queued on
//     a connection attempt in progress (and fails with the attempt's error if it fails); else, while the server is
//     known unreachable (between failed attempts), it fails at once with a *ConnError matching ErrUnavailable. So
//     nothing waits for a server known to be down, and a command issued during a quick reconnect is not lost.
//     (That is the standalone Client; a Sentinel or cluster Client retries such commands: see Topologies.)
//   - Context: when a command's context ends first, its future completes with ctx.Err(); the reply is still read
//     in order and discarded, so the pipeline stays in step. A standalone connection watches each context with
//     commands in flight on it once (one context.AfterFunc, however many commands share the context: ctxwatch.go);
//     a Sentinel or cluster command, which may move to another connection, carries an AfterFunc of its own.
//     Contexts that cannot end cost nothing. The promise records the context's Done channel
//     (future.Promise.CancelledBy), so a Get with the same context waits on the future alone: one channel receive
//     instead of a select, whose lock on the context's Done channel is shared by every goroutine waiting on it.
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
// that can end costs a map lookup when other commands with the same context are in flight on the connection, and
// otherwise a context.AfterFunc registration (a few allocations; see ctxwatch.go). No goroutine per command, no
// timer per command, one write syscall per batch.
//
// Cost figures, with the commands that reproduce them, are in bench/README.md ("conn"): with many goroutines the
// client keeps one server core nearly saturated at a few µs of its own CPU per acquire/release pair, and a
// sequential caller's round trip is within a few percent of a plain net.Conn loop's.
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
// The pub/sub connection is not on the event loop: like the latency lane it runs on Go's netpoller, with a reader
// goroutine that dispatches each message to its handlers. A pub/sub connection carries few bytes, so the loop's
// batching gains it nothing, while its messages are what wakes an idle process: a waiter of a lock released by
// another process. An event loop waits in a blocking epoll_wait system call, so every message would first wake the
// loop's thread and then the waiter's, and the Go runtime counts a thread in a system call as busy: its monitor
// thread keeps polling at a short interval while any loop waits, where a process whose goroutines all wait on the
// netpoller lets it sleep. With many processes each waiting for a lock (the contention a distributed lock exists
// for), that idle cost decides throughput: on 2 cores, 64 processes taking turns on one lock used about half the
// client CPU per grant on the netpoller (bench/README.md, "conn").
//
// # Where callbacks run
//
// Pub/sub handlers and the callbacks of command futures (future.OnComplete, Then, Compose) run on the goroutine
// that completes them: an event loop, a stream reader goroutine, a caller's Get driving the latency lane (which
// completes every reply it reads, not only its own), the timer's worker (when a response timeout or a
// dropped connection fails commands), a context.AfterFunc goroutine (cancellation), or the goroutine calling Close.
// They must not block: every other connection of the loop waits for them. They may issue commands and subscribe
// (nothing is locked while they run), but must not call Close. A panicking callback or handler is recovered and
// logged.
//
// # TLS
//
// gnet has no TLS. A rediss:// connection (Config.TLS non-nil) runs over crypto/tls with a reader goroutine and a
// writer goroutine (the stream transport, shared with the latency lane); the pipeline (buffer, FIFO, flush rules,
// the caller's direct write of a small batch on an idle connection) is the same code. The URL options
// tls_ca_file, tls_cert_file with tls_key_file, and tls_insecure_skip_verify fill Config.TLS (see ParseURL). A
// scheme that does not match the port fails fast with ErrInvalidConfig saying which to use: TLS against a
// plaintext server is recognised within about 250 ms (a plain PING probe on a second connection, since
// redis-server would otherwise wait for the ClientHello's end of line until DialTimeout), plaintext against a TLS
// server from its reset (a ClientHello probe). A certificate either side refuses is ErrInvalidConfig too.
//
// # Connecting
//
// Each connection's handshake — AUTH (when credentials are set), SELECT (DB other than 0), CLIENT SETNAME
// (ClientName), PING, and ROLE on a Sentinel Client's data connections — is one write, every reply checked for
// what it must be (+OK, +PONG, a ROLE array saying master), the whole bounded by DialTimeout and each reply by
// 64 KiB. A wrong, malformed or oversized answer fails the attempt with a *HandshakeError naming the step and
// quoting (escaped, truncated) what came back. Refusals that no retry will fix are not ErrUnavailable:
// credentials or permissions (WRONGPASS, NOAUTH, NOPERM...) match ErrAuth, a database or client name the server
// refuses matches ErrInvalidConfig; a Client refused this way retries only every ReconnectMaxBackoff.
//
// By default New waits for the first connections and fails if none is made, so that a wrong address or password
// shows at start. With LazyConnect (URL option lazy_connect=true) New returns at once, even with every server down;
// commands fail with ErrUnavailable until a server answers, and connections are made in the background.
//
// Config.OnEvent is told of every connection connected, lost (with the error), reconnected, every failover
// (Sentinel or cluster master change) and every pub/sub resubscription: an Event of plain data (kind, address,
// role, error, time), made to feed metrics and logs. It runs synchronously where the change happens and must not
// block.
//
// # Bounded memory
//
// A reply can take no more memory than Config.Limits allows, whatever the server sends: bulk strings up to 8 MiB,
// simple-string and error lines up to 1 MiB, 262,144 array elements and 16 MiB per reply by default (resp's
// Default* constants; URL options max_bulk_len, max_line_len, max_array_len, max_reply_len). The decoder refuses a
// reply as soon as its bytes show it over a limit (a length header, a line's bytes so far), before buffering or
// allocating what it announces. A reply still arriving is held in one buffer per connection that grows to at most
// the limit — once, to the exact size, for a bulk string (resp.Decoder.Needed), which is decoded when its last
// byte arrives — while the transport's own buffer holds one read. A reply over a limit fails its command (and the
// others in flight on the connection) with ErrConnLost and a *resp.LimitError naming the limit and how to raise
// it; the connection is re-made. So an endless or enormous reply costs at most a few MiB of heap: a 512 MiB bulk
// string or a 100-million-element array is refused at its header, an endless simple string after 1 MiB. The
// tests feed such replies to event-loop, TLS, pub/sub and pooled connections and bound the heap's peak per
// connection to four times the line limit — a little more (one more doubling of the buffer, 128 KiB) for an endless
// line inside an array, whose buffer grows toward the reply limit until the line shows itself over its own.
//
// # Platforms
//
// The API and its guarantees are the same on every system gnet runs on (Linux, macOS, the BSDs, Windows). Three
// shortcuts need a Unix socket descriptor and are used on Linux, macOS and the BSDs: the doorbell that wakes an
// event loop without an allocation, the direct write of an idle connection's command from the caller's goroutine,
// and the non-blocking peek of an idle latency lane. On Windows (gnet runs its loops on goroutines and channels
// there) a wake-up uses gnet's Wake (one allocation), every write goes through the loop, and a lane idle for more
// than a millisecond is handed to its background reader while that command takes an event-loop connection. A
// build with the locksmith_portable tag selects the Windows path on any system; the test suite runs conn both ways.
//
// # Topologies
//
// Config names the deployment: Addr (one server), SentinelAddrs + MasterName (a master found through Sentinel), or
// ClusterAddrs (a Redis Cluster); ParseURL reads the same from
//
//	redis://[user:pass@]host:port[/db][?opts]
//	redis-sentinel://[user:pass@]host1:port1,host2:port2/mastername[?db=N&sentinel_password=..&opts]
//	redis-cluster://[user:pass@]host1:port1,host2:port2[?opts]
//
// (rediss, rediss-sentinel, rediss-cluster for TLS). The API is the same in every topology. The Client keeps a node
// per server it talks to (a pool as above plus a pub/sub connection); a router above the nodes (topo_router.go) picks
// the node of each command on Sentinel and cluster Clients, and takes back what a server refused without running
// it. Standalone commands never pass through the router: its cost (a slot hash, a copy of each command's bytes
// into the connection's log) is paid only by the topologies that need it, and the allocation stays one per
// command everywhere.
//
// Commands that were not run are sent again, invisibly, within Config.RetryTimeout (default 5 s) and the
// command's context: MOVED (the slot map is updated, then a refresh fetches the rest), ASK (ASKING and the command,
// on the importing node, under one lock so nothing comes between them), TRYAGAIN, CLUSTERDOWN, LOADING and
// READONLY (after a backoff on the timer wheel: 10 ms doubling to 100 ms, cut short when the topology changes),
// and commands that could not be sent because their node had no usable connection or was still connecting when
// the attempt failed. A command in
// flight on a connection that drops fails with a *ConnError matching ErrConnLost, as on a standalone Client: it
// may have run, and scripts that acquire or release are not idempotent. When the retries run out, the caller gets
// the last refusal (a *resp.ServerError) or ErrUnavailable. So, unlike a standalone Client, a Sentinel or cluster
// Client does not fail fast while a master is down: a failover is a few seconds, and the commands issued during
// it complete after it: from a master's crash, about the servers' own failover time plus tens of milliseconds
// (bench/README.md, "conn topologies"). Subscribe still fails fast.
//
// # Sentinel
//
// New asks the Sentinels (all at once) for the master (SENTINEL GET-MASTER-ADDR-BY-NAME, with the configuration
// epoch from SENTINEL MASTER) and takes the answer with the highest epoch that passes a ROLE check: after a
// failover, Sentinels that have not heard of it yet still name the old master, which in a graceful failover still
// says master, and the epoch is how Sentinels themselves settle that. Every connection to the master also sends
// ROLE in its handshake and is refused unless the server says master (ErrNotMaster), so a stale answer or an old
// master that comes back never serves writes. The Client subscribes to +switch-master and +promoted-slave on every
// Sentinel (one pub/sub connection each, authenticated with SentinelUsername and SentinelPassword) and moves its
// node to the new master on the first of them (+promoted-slave comes about a second earlier in a graceful failover,
// a second during which the old master accepts writes the failover drops): in-flight commands fail with a
// *ConnError wrapping ErrMasterSwitched, every connection dials the new master at once, the pub/sub connection
// subscribes every channel there and handlers receive KindResubscribed. It also asks the Sentinels again when a
// connection to the master fails, on READONLY, when a Sentinel connection comes back (messages may have been
// missed), and every TopologyRefreshInterval (default 5 s), at most once per 100 ms.
//
// # Cluster
//
// New reads the slot map from the first seed that answers: CLUSTER SHARDS (Redis 7; CLUSTER SLOTS when a server
// does not know it or the user's ACL refuses it), and probes once, with COMMAND INFO SSUBSCRIBE, whether the
// servers have sharded pub/sub. A user refused both CLUSTER SHARDS and CLUSTER SLOTS gets an error matching ErrAuth
// that names the rules to grant, from New or, with LazyConnect, from every command that finds no node (they are
// not retried); docs/acl.md lists what a cluster user needs besides a standalone one's rules. The
// map is one atomic pointer per slot, read without locks. Routing: KeySlot (CRC-16 of the key or of its hash tag,
// exactly as Redis) of the first key: keys[0] for Eval and Cmd.Keys, for Do the key of the command (args[1], or
// the first key after numkeys for EVAL/EVALSHA/FCALL; keyless commands such as PING, INFO, WAIT, PUBLISH go to any
// master), DoKey or Cmd.RouteKey to name it explicitly. A script whose keys are in different slots fails with a
// *CrossSlotError before it is sent, and the server's CROSSSLOT reply to other commands is the same type
// (ErrCrossSlot). A Pipeline goes to one node: commands whose keys map to different nodes fail with ErrCrossNode.
// The map is refreshed every TopologyRefreshInterval, after MOVED and CLUSTERDOWN, when a connection fails or a
// command finds its node unreachable (at most once per 100 ms), and while a master of the map has no open
// connection (a failover in progress, or a server down for good) every 100 ms, backing off to 2 s. The refresh
// runs on a short-lived goroutine that asks the nodes in turn (those with open connections first, then the other
// nodes of the last map, then the seeds) on a fresh connection each, off the pipelines; while the maps it gets name
// a master it cannot reach, it asks the next node (the promoted replica knows of its promotion first) and keeps the
// map with the fewest such masters. A node that leaves the map is closed after ResponseTimeout, so replies in
// flight (MOVED, mostly) still arrive; what is left fails with a *ConnError wrapping ErrNodeRemoved.
//
// Pub/sub: a channel is subscribed on the node serving its slot, with SSUBSCRIBE when the servers have it (else,
// or with DisableShardedPubSub, SUBSCRIBE there, which PUBLISH reaches from any node). PublishCommand returns the
// matching publish command ("spublish" or "publish") for scripts to take as an argument, as Redisson's do. One
// registry holds every channel of the Client with the node it is on; when a refresh moves a slot, when a server
// answers MOVED to SSUBSCRIBE, or when it drops the channel itself (Redis 7 sends sunsubscribe when the slot
// leaves the node), the channel is subscribed on the slot's new node with its handlers and waiters, and the
// handlers receive KindResubscribed. Because the server sends sunsubscribe unasked, SUNSUBSCRIBE replies are
// treated as pushes and SUNSUBSCRIBE queues no reply entry.
//
// # Replica acknowledgement (WAIT)
//
// SendAndWait sends a command and WAIT numreplicas timeout on one connection, back to back, and completes one
// future with both results (WaitResult). A redirected or re-sent command is re-sent with a WAIT of its own, and the
// WAIT of a superseded attempt is ignored (attempt generations in syncOp), so the count always refers to the
// attempt that ran. A server or proxy without WAIT is detected from its "unknown command" reply: one log line,
// WaitErr = ErrWaitUnsupported, and WAIT is not sent again by this Client. WAIT holds its connection until the
// replicas answer or the timeout passes, and commands pipelined behind it on that connection wait too: keep the
// timeout short (it must be below ResponseTimeout).
//
// # Costs of the topologies
//
// The cluster path costs the client little: a one-node cluster through a cluster Client runs about as fast as a
// standalone server, at a slot hash and a copy of each command's bytes. Spreading keys over several masters splits
// each batch between them: every server gets shallower batches (more system calls per command), and replicas add
// the replication stream. With every server on the same two cores, a three-master cluster therefore made fewer
// pairs per second than one server; with a core per server the masters should add up. Figures: bench/README.md
// ("conn topologies").
package conn
