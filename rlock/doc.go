// Package rlock is Redisson's lock family for Go: a reentrant distributed lock in Redis (RLock) with a watchdog,
// waiting without polling, futures, and a context that tells the holder when the lock is gone, and on the same
// machinery the fair, fenced and read-write locks, MultiLock and RedLock, semaphores, the count-down latch and rate
// limiters — wire-compatible with Redisson, so Go and Java processes exclude each other on the same names.
//
//	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: "127.0.0.1:6379"}})
//	...
//	l := c.Lock("orders:42")
//	held, err := l.Lock(ctx)        // blocks until held (or ctx ends)
//	if err != nil { ... }
//	defer l.Unlock(held)
//	doWork(held)                    // held is cancelled if the lock is lost
//
// Every call of the locks (Lock, FairLock, FencedLock, ReadWriteLock and its halves, MultiLock, RedLock) has an
// Async form returning a future (package future), except Run and TryRun, which call the caller's function; so has
// every call of the other objects that waits or releases (acquiring and releasing permits, a latch's Await and
// CountDown). Their other queries and set-up calls (AvailablePermits, TrySetPermits, Count...) block until the
// server answers or ctx ends. A blocking call is the async call followed by Get. Run is the "execute in lock"
// helper: lock, call, always unlock. Status reads a lock's owners, hold counts and TTL in one step.
//
// # Wire format
//
// The keyspace is Redisson's, byte for byte. A lock is a HASH named after the lock with one field,
// "<clientUUID>:<ownerID>", whose value is the owner's hold count, and a PEXPIRE equal to the lease. Releasing the
// last hold deletes it and publishes "0" on the channel "redisson_lock__channel:{<name>}". A Redisson client on the
// same name sees exactly what another Redisson client would write: it is refused with the remaining TTL while Go
// holds the lock and woken by Go's unlock message, and the other way round (integration test
// TestRedissonLayoutInterop plays the Java side with raw commands). Each operation is one EVALSHA of a script
// written for this package (Scripts lists each with its keys, arguments and replies); a script's SHA-1 is computed
// locally and a NOSCRIPT reply is handled by package conn.
//
// Auxiliary keys and channels carry the name as a Redis Cluster hash tag, by Redisson's rule: prefix:{name}, or
// prefix:name when the name already contains "{" (names.go). On a cluster, a lock whose name contains "{" without a
// hash tag Redis accepts ("a{}b", "{a") is refused with an *ArgumentError: its prefixed keys would hash elsewhere,
// and it could be acquired but never released (Redisson has that trap). Scripts publish with the command conn says
// reaches this client's subscribers — PUBLISH, or SPUBLISH on a cluster with sharded pub/sub, as Redisson chooses —
// passed as their last argument.
//
// # Owners and the held context
//
// Redisson names a holder by its client UUID and thread id. Go has no usable thread ids, so the owner travels in
// the context: an acquire whose context carries no owner takes a new owner id from the client's counter (ids from
// 10,000,000,001 up), and returns the held context, which carries it. Acquiring again with the held context
// re-enters the lock (hold count + 1, same held context, still one renewal); Unlock with it releases one hold.
// WithOwner pins an owner explicitly — to pass a lock to another goroutine or Client, or to act as the owner id a
// Java service holds a lock as. OwnerOf reads it. A held context acts only through the Client that made it (that
// Client renews the hold, counts it and ends the context): any other Client refuses it with ErrOtherClient and
// sends nothing; a pinned owner is not tied to a Client. A nil held context holds nothing (Unlock returns
// ErrNotHeld, so "held, err := l.TryLock(...); defer l.Unlock(held)" is safe), and a nil context given to any
// other call is an *ArgumentError. MultiLock and RedLock hold all their locks with one owner, which their held
// context carries.
//
// The held context carries the acquiring context's values but not its cancellation: it is the lease, not the
// request. It is cancelled, and context.Cause reports why, when the lock stops being held:
//
//   - ErrReleased: the last hold was released (Unlock, Run).
//   - ErrLockLost: a renewal found the lock no longer held by the owner (it expired while renewals could not get
//     through, or was force-unlocked), or an Unlock found it so.
//   - ErrLeaseExpired: the lease ran out locally: a lease lock reached its end, or no renewal of a watchdog lock was
//     confirmed within the lease (the server is unreachable or too slow). The lease is counted from when the
//     confirmed command was sent (for a retry that only confirms what an earlier attempt did, from when that
//     attempt was sent), and the context is cancelled slightly before that end (two timer ticks plus 1% of
//     the lease), so it is never trusted past the point where the server could let another owner in, whatever the
//     network does. A command that may shorten the lease on the server (a re-entry with a shorter lease, which
//     sets it as Redisson's does) moves the end when it is sent, whether or not its reply arrives.
//   - ErrClosed: the Client was closed while the lock was held.
//
// Work done under the lock should use the held context (or select on its Done channel) so that it stops when the
// lock goes. Deriving contexts from it starts no goroutine: its cancellation is a standard cancel context over a
// non-cancelable parent. Its Err checks the lease's local end by itself, without waiting for the timer that
// cancels it there (a starved process may run the timer late), so a holder that checks held.Err() before each
// step is never told it holds the lock past that end; contexts derived from it learn of the end by cancellation.
// LeaseEnd returns that end, for work that must be scheduled to stop before a fixed lease runs out.
//
// # Server restarts and persistence
//
// A lock lives in the server's memory. A server restarted without persistence, or with appendfsync everysec
// (which may lose up to about a second of acknowledged writes when the process is killed), can come back without
// locks it granted: another owner may then acquire while the first still holds its held context, until the
// first's next renewal finds the lock gone and cancels it with ErrLockLost (within WatchdogTimeout/3), or its
// lease ends locally. For locks that must survive a restart, run Redis with appendonly yes and appendfsync always;
// for failovers, see Config.SyncReplicas below. The chaos tests (package chaos) check both kinds of restart.
//
// # Leases and the watchdog
//
// Lock (and TryLock with lease 0) uses the watchdog: the lease is Config.WatchdogTimeout (30 s by default) and it
// is renewed every third of it while the lock is held, so a process that dies frees its locks within the watchdog
// timeout. LockLease (and TryLock with a lease) sets a fixed lease and no renewal.
//
// Each held lock, of whatever kind, has exactly one timeout on the client's timing wheel (package timer), never a
// goroutine. A renewal that falls due joins the batch of its key — its renewal script (the plain layout's, or the
// read-write lock's) and, on a Redis Cluster, its slot; a batch goes out as one EVALSHA when it holds
// RenewBatchSize (100) locks or when its first renewal has waited a thirtieth of the lease, and the script answers
// per key. Since every lock of a
// batch is rescheduled from the same confirmation, batches stay together round after round: 10,000 locks with a
// 3 s watchdog cost about 96 renewal calls per second of 100 locks each. A key reported gone makes that lock lost;
// a batch that fails on the network is retried after RetryDelay and by itself declares nothing — each lock's local
// lease end does. The renewal is registered before the acquire completes and cancelled at the start of Unlock, so
// no renewal outlives an unlock (Redisson issue #7272) and a re-entry keeps exactly one (#6483).
//
// # Waiting
//
// Every call that may wait — an acquire of any lock, permits of a semaphore or rate limiter, a latch's await — is
// driven by one engine (waiter.go, queue.go, lockqueue.go). A refused acquire learns the holder's remaining TTL.
// The waiter then joins this client's FIFO queue for the lock's channel; the first waiter subscribes to the channel (one
// reference-counted subscription per channel and client, through conn) before anyone retries, so no release is
// missed between the refusal and the subscription (Redisson #1763). Only the head of the queue keeps a bound: it
// retries when a message arrives, when the subscription is (re-)established, and at the latest when the TTL of its
// last refusal has passed, so a lost message costs at most that TTL; what has no TTL to wait for (a key without
// expiry, a semaphore, a latch) is looked at again every second. The others wait for the head: when it leaves,
// the next head retries at once — or, when the head was just granted an exclusive lock, waits for its release,
// bounded by its lease. Nobody polls, and a waiting call — also an async one — holds no goroutine: it is a struct
// driven by replies, messages and one timeout. The subscription ends when the last waiter leaves. Timeouts run on
// the transport's timing wheel, whose 10 ms tick suits leases and refresh intervals; a bound shorter than 64 ms
// (the queue's 5 ms gap below, a lock about to expire) runs on a 1 ms wheel of the client's own, so that a free
// lock is not left idle for up to a tick while every waiter holds back.
//
// The plain and fenced locks are contended between processes — inside one a sync.Mutex would do — so their
// waiters are ordered on the server, not only in each client. When every waiting process learns of a release
// from the lock's channel, each release wakes a waiter in every process: they all attempt, one wins, the others
// sleep again — work that grows with the processes while the lock passes no faster, and the winner is whoever's
// attempt arrives first. Instead, as in ZooKeeper's lock recipe and etcd's concurrency.Mutex, where each waiter
// watches only its predecessor, a refused attempt also puts its caller in a queue kept beside the lock in its hash
// slot (locksmith_lock_queue:{name} and locksmith_lock_timeout:{name}: this package's keys, which Redisson
// neither reads nor writes), and the release script grants the lock to the head of that queue in the same step
// and tells only that waiter's client, on the client's own channel (locksmith_lock__channel:{name}:<clientUUID>).
// A hand-over costs one script and one message whatever process the next waiter lives in; nobody else wakes; and
// waiters of different clients are served first come, first served. Within a client, a new waiter queues behind
// the client's waiters without a command (the first holds the client's place on the server), and a release by
// the client names its next waiter: when nobody of another client is queued, the script grants it directly — one
// round trip, as in a single process before — and it may grant it before the queue's head at most 8 times in a
// row, so that a process passes the lock among its own goroutines without waking another process, yet never
// receives more than 9 consecutive grants while a waiter of another process waits before it.
//
// Waiters that die do not block the queue for long: each queued waiter attempts again every few seconds (a third
// of a 5 s liveness window, or of its lease when shorter), which refreshes its entry's deadline on the server's
// clock, and an entry whose deadline passed is dropped by the next script that looks at the head. A grant made to
// a watchdog waiter by someone else's release applies a lease of that window (renewed a third of the way in), so a
// grant to a waiter whose process just died keeps the lock at most 5 s; a lease waiter's grant applies its own
// lease. The waiter queued next learns that it is the head by its next attempt (a hand-over tells only the
// grantee), so it takes the lock at most one refresh interval after that grant ends; so does a waiter that joined
// the queue behind an entry whose waiter had died (a first attempt joins the tail without looking at the head, in
// five commands: the path of every process that comes back for a lock it just released). A waiter that gives up
// takes its entry out, and gives back a grant made to it meanwhile; a call whose wait ran out returns once the server
// answered that (at most 250 ms later if it does not), so that what the caller sends next — on any connection of
// the pool — finds the entry gone. A grant message that is lost (the subscription was down) costs the waiter at
// most its refresh interval: its next attempt finds the hold and claims it. A message that comes so late that the
// grant's lease ended unclaimed first is never taken for the lock: the waiter's attempt that found its entry gone
// queued it again and was told so, and from then on each grant message only makes the waiter attempt, which claims
// a grant still live and is refused otherwise. A client keeps a lock's subscriptions for a second after its last
// waiter left, since a contended loop comes back at once.
//
// Clients that do not queue — a Redisson client on the same name — are excluded as before, and woken by the unlock
// message whenever the lock becomes free for them. Since a busy queue may never let the lock go free, the release
// frees it after every second of hand-overs during which it was never free (a client's run of direct grants alike,
// which ends when the lock leaves the client) and publishes the unlock message, and the queue's waiters then leave
// it alone for 5 ms: a Redisson waiter that acts within 5 ms of its wake-up gets the lock within a second of
// contention, at a cost of 0.5 % of the queue's throughput. Releases by Redisson clients, force unlocks and
// expiries publish or free the lock without serving the queue; the head learns of them from the lock's channel
// (each client with waiters stays subscribed to it) or its bound, and any attempt that finds the lock free with
// another waiter at the head hands it to that waiter first.
//
// What the order costs. Serving processes first come, first served means that under contention nearly every grant
// wakes another process, while a lock that lets the releasing process take it again at once (as the polling
// clients do) keeps one process busy and the others asleep: such clients make more acquisitions per second across
// processes, with waiters that wait seconds and a few processes that get most grants; this package makes fewer,
// with every waiter served within a bounded time. Against a bare first come, first served hand-over through the
// server, one script and one message per grant and nothing else (the bench's fifo reference), it makes about as
// many with several waiters per process and 0.7 to 0.8 times as many when every waiter is a process of its own
// (bench/README.md, "Measured here"). Without contention, the acquire
// and release carry the queue's keys and check that no queue exists: about a fifth more server time per
// uncontended pair than Redisson's scripts, which a server-bound workload (thousands of goroutines, each locking a
// name of its own) sees as that much less throughput.
//
// A waiter whose context ends, or whose TryLock wait runs out, leaves the queue at once; if the lock was granted to
// it in flight, it is released (permits are given back). Context errors are returned as they are
// (errors.Is(err, context.Canceled)), never as ErrNotAcquired. A wait that runs out while an attempt is in flight
// waits up to 250 ms more for that attempt's reply, which tells whether the lock was granted; without it, the call
// returns an *OutcomeUnknownError (below).
//
// # Release and retries
//
// A release must be safe to retry after an ambiguous failure (the connection dropped after the command was
// written): it must never release two holds. Redisson writes a latch key per unlock for that
// (redisson_unlock_latch:{name}:<requestId>, with the result and an expiry) and checks it first. This package makes
// the release conditional instead: the client sends the hold count it knows the owner has, and the script only
// decrements when it finds that count, so a retry of an attempt that already ran finds count-1 (or no lock) and
// changes nothing. That is as safe for the owner's own holds, needs no extra key, and costs the server less than
// even Redisson's latch-free script (HGET replaces HEXISTS; the last hold is deleted without the HINCRBY). Measured
// with INFO commandstats usec_per_call on redis-server 7.0.15 (BenchmarkReleaseServerCost: 200,000 releases at
// pipeline depth 64, median of 5 runs): 4.5 µs of server time per conditional release, 8.2 µs for the latch scheme
// and 5.0 µs for Redisson's release without retry safety; the latch scheme also keeps one key (about 146 bytes)
// per release in memory until it expires. A plain release that grants the lock to the next waiter is retry-safe in
// the same way: a retry finds the releasing owner gone and the named waiter holding the lock, and reports that
// grant again without counting it twice.
//
// Acquires are not retried after an ambiguous failure (a grant would count twice). The call returns an
// *OutcomeUnknownError (errors.Is ErrOutcomeUnknown, and the transport's error, conn.ErrConnLost), never
// ErrNotAcquired: the caller holds nothing, and the client releases whatever the lost reply may have granted —
// an orphaned grant. That release is conditional too: it expects the owner's count with the grant (1 for an owner
// made for the call; the recorded count plus one for a re-entry, which so also tells the client the owner's true
// count), so a server that never ran the acquire changes nothing, and it is sent again after every failure until
// the server answers or the grant's lease has passed. A re-entry's release goes before the owner's later commands.
// Releases of several lost re-entry grants go one at a time, each expecting the recorded count plus the grants
// still to release, so that none of them can take one of the callers' holds when some grants were never made.
// For an owner it made, the client records the holds its callers were granted, never more: a grant whose reply
// counts more (an attempt of the owner whose caller was told the outcome is unknown ran before it) does not record
// them, and they are released by that attempt's release or by the Unlock that ends the owner's holds here.
// An owner pinned with WithOwner may hold the lock through other Clients, whose holds cannot be told from the
// grant: it is left to its lease, and the Unlock that ends the owner's holds here returns a *StillHeldError if the
// server holds more. A hold whose Unlock failed on the transport is orphaned the same way and released in the
// background. Stats counts orphaned grants released and left to expire, the Observer reports each (Orphan).
//
// Because a release is retried, Unlock takes no context and waits for its outcome: against a server that stops
// answering, up to (RetryAttempts+1) × conn.Config.ResponseTimeout + RetryAttempts × RetryDelay, 12.6 s with the
// defaults. A caller that must not wait that long bounds its own wait with the async form,
// UnlockAsync(held).Get(ctx); the release goes on, and if it fails the lock ends with its lease.
//
// # The lock family
//
// The other objects reuse the machinery above: every lock's grant is a hold of the same kind (renewed by the one
// watchdog, released by the same conditional release, reported lost through the same held context), and every
// wait is a waiter of the same engine. They differ in their scripts, and in whom a message on their channel wakes:
//
//   - FairLock: the server queues the waiters (LIST and ZSET, as Redisson); each waiter waits on its own channel,
//     which the release publishes to when it is its turn, so only the head is woken. A script that changes the
//     head (a grant, a waiter leaving or dropped) wakes the new head, which then waits for the release bounded by
//     the holder's lease; queued waiters also attempt at least every 750 ms, to notice what other clients
//     (Redisson's) change in the queue without a message.
//   - FencedLock: the plain lock's hash, channel and queue (its waiters queue with plain Lock's on the same name),
//     plus a token counter incremented by every grant; a message wakes the head.
//   - ReadWriteLock: one channel; a write unlock ("1") wakes every waiter (any number of readers may enter), a
//     read unlock the head. A read grant does not make the next waiter wait.
//   - Semaphore and PermitExpirableSemaphore: the message carries the permits available; it wakes, in order, the
//     waiters those permits cover. A new acquire attempts at once (Redisson's semaphores are not fair).
//   - CountDownLatch: the latch opening wakes every awaiter.
//   - RateLimiter and FixedWindowLimiter: no channel; a refusal says when permits come back, and the waiter sleeps
//     on the timer until then.
//
// Plain, fenced and write locks are exclusive, and new acquirers of this client queue behind the client's waiters
// for them. The plain and fenced locks share the server's queue of waiters (see "Waiting"); a release grants a
// plain Lock's waiter the lock in the same step, and wakes a fenced waiter instead, which needs its token from its
// own script.
//
// # Server clock
//
// Deadlines that several clients compare are taken from the server's clock (redis.call('TIME') in the script)
// rather than each client's, as Redisson does: fair-lock waiter deadlines, permit leases, and rate-limiter grant
// times. Clients whose clocks disagree can then neither reorder nor starve one another. TIME is allowed in scripts
// that write under effects replication, the default since Redis 5 and the only mode of Redis 7; the scripts call
// redis.replicate_commands() first for older servers.
//
// # Deliberate changes from Redisson
//
// The layout is Redisson's and a Redisson client on the same names interoperates. The behaviour differs where
// Redisson's has a known weakness:
//
//   - Server clock (TIME) for fair-lock deadlines, permit leases and rate-limiter grants (see above).
//   - Fair lock: each waiter owns its deadline (the end of its wait, or a liveness window it refreshes), instead
//     of deadlines derived from its position that are all shifted when one waiter leaves.
//   - ReadWriteLock: a read-to-write upgrade returns ErrLockUpgrade at once (Redisson waits for itself until its
//     own read lease ends); a write re-entry keeps the longer of the remaining and the new lease (Redisson adds
//     them); the last write release that leaves read holds publishes "1", so waiting readers may join them; the
//     watchdog renews only the owner's own read-hold keys (Redisson's renews every reader's, which keeps a dead
//     reader's holds alive as long as any reader lives).
//   - FencedLock honours its lease on every acquire form (Redisson's lockAndGetToken(lease) ignores it).
//   - MultiLock acquires its locks in name order, so two MultiLocks over the same locks never deadlock (Redisson
//     takes them in the given order and relies on retries); RedLock attempts its masters in parallel and fails fast
//     with a *QuorumError when errors make a majority impossible.
//   - RateLimiter gives up at once when the script says permits come back only after the wait; the fixed-window
//     limiter gives refused permits back, so refusals do not use up the window.
//   - Release: conditional on the expected hold count instead of an unlock latch key (see "Release and retries").
//
// # Safety model: what the lock does and does not guarantee
//
// With one Redis server that stays up, at most one owner holds a lock at any time, and the holder's held context is
// cancelled before its lease can end on the server. The lease is what makes the lock safe against dead holders,
// and it is also its limit: a holder that stops for longer than the lease (a long GC pause, a stopped VM, a
// network partition) loses the lock to the next owner, and learns it only afterwards, from its held context. Work
// that must never run twice concurrently should therefore check its held context before each externally visible
// step, and resources that can check a monotonic token should be protected with a fenced lock (fencing tokens),
// not with a lease alone.
//
// Redis replication is asynchronous. If the master fails over to a replica that had not yet received a lock, the
// new master does not know about it and can grant it to another owner: two holders. Redisson has the same window.
// Waiting for replica acknowledgement after an acquire (Config.SyncReplicas, below) narrows it but cannot close
// it; independent masters with a quorum (RedLock / MultiLock) are the answer where the cost is worth it. After any
// such event the held contexts report loss as soon as a renewal finds the lock gone.
//
// # Replica-synced acquire
//
// With Config.SyncReplicas = n, every acquire attempt of every lock kind (plain, fair, fenced, read, write; the
// locks of a MultiLock or RedLock through them) goes out as the acquire script followed by WAIT n SyncTimeout on
// the same connection (conn.Client.SendAndWait), Redisson's checkLockSyncedSlaves. A grant is reported to the
// caller only once n replicas acknowledged it. A grant fewer replicas acknowledged within SyncTimeout — or whose
// count is unknown because WAIT failed — is released again at once (the conditional release of that very grant)
// and the acquire retried after RetryDelay, at most RetryAttempts times and within the call's wait; then the call
// fails with a *ReplicationError (errors.Is ErrNotReplicated) saying how many replicas acknowledged. The caller
// holds nothing then. A refused attempt is refused as usual (its WAIT changes nothing).
//
// What it buys: a failover promotes a replica with the best replication offset (Sentinel, and a cluster replica
// with the freshest data wins its election first), so once every grant is on n replicas, a failover that promotes
// one of them keeps every lock reported held. What it does not: it does not make the write durable on the replica
// (its persistence is its own), a replica that acknowledged may still lose the election to one that did not (with
// n below the replica count), and a replica promoted by hand (or by a failover forced with a lagging replica) may
// have none of it. The integration test TestFailoverTrials measures the difference (one master, two replicas
// lagging under CLIENT PAUSE, Sentinel, the master killed with SIGKILL): with Sentinel's own detection, 0 double
// grants in 100 trials with SyncReplicas = 1 against 100 in 100 without it. When the failover is forced at once
// after the kill (SENTINEL FAILOVER), Sentinel may still hold stale replica offsets and promote the replica that
// did not acknowledge: 18 double grants in 100 trials with SyncReplicas = 1, none in 25 with SyncReplicas = 2
// (every replica). Where failovers can be forced, set SyncReplicas to the number of replicas.
//
// Costs: one WAIT per attempt, which blocks its connection on the server until the replicas answer (a round trip
// to the replicas, about a millisecond on a LAN), so commands pipelined behind it wait too; keep SyncTimeout short.
// A release does not grant the lock to the next waiter (it would grant inside the release script, where no WAIT
// can follow): it frees the lock and wakes that waiter, which attempts itself — one more round trip per contended
// hand-over. Renewals and
// releases do not wait. A server or proxy without WAIT is detected from its first "unknown command" reply (one log
// line from conn), after which acquires go out alone.
//
// # Redis permissions (ACL)
//
// A Redis user can be limited to what each object kind needs: docs/acl.md in the repository lists, for every kind,
// the commands (the client's own and those its scripts call, which Redis checks against the calling user too), the
// key patterns (the object's name and its auxiliary keys) and the channel patterns, measured against
// redis-server 7 by a test that runs every operation of each kind as a user with exactly those rules.
//
// Pub/sub permission only makes waiting fast. A user without a channel, +publish or +subscribe still gets correct
// results: scripts publish with redis.pcall, so a refused wake-up message never aborts a script after its writes,
// and the operation (a release, a permit given back, a latch opening) reports its own outcome — Unlock returns nil
// when the lock was released. The client hands the refused message to its own waiters, logs the first refusal of
// each kind once, reports it to Observer.PubSubDenied, counts refused messages in Stats.PublishesRefused, and from
// then on its waiters look again at least every second instead of waiting for messages.
//
// # Close
//
// Client.Close does not release held locks: it stops their renewal and cancels their held contexts with
// ErrClosed, and each lock ends on the server when its lease runs out — as when the process dies. Unlock first to
// free them at once. Waiters, and calls parked on the timer for a retry, fail with ErrClosed. Close waits for the
// transport's goroutines to exit, and for the worker of the client's short-wait wheel (see Waiting); the package
// starts no other goroutine.
//
// # Concurrency
//
// Client and every handle (Lock, FairLock, Semaphore...) are safe for concurrent use. A held context may be used
// from any goroutine; two goroutines that share an owner share its holds, so the lock does not exclude them from
// each other. Observer methods and future callbacks run on the transport's event loop, the timer's worker, or a
// caller's Get that reads replies for others, and must not block. A blocking call of this package made inside one
// — Lock, Unlock, any call that is not an Async form, and future.Get on a pending future — returns ErrInCallback at
// once and sends nothing: it would stall that goroutine, and could wait forever for a reply only that goroutine
// would read. Use the Async forms there, or hand the blocking work to a goroutine. Recognising a callback costs one
// atomic load while no callback runs anywhere, and a walk of the caller's stack (about 0.1 µs a frame) while one
// does (future.InCallback). A callback or Observer method that panics is a bug of its own, and the client treats
// it as one that must not spread: it recovers the panic, logs it at Error (Config.Logger), and finishes what it
// was doing — the hand-over to the next waiter, the releases queued behind the call — so that no other call is
// held up by it.
//
// Every call ends when its context does. Calls that share one context (a server's root context, an errgroup's) are
// watched together, one registration per shard of the client's state, so sharing a context across thousands of
// goroutines costs about what context.Background does.
//
// Goroutines sharing an owner may re-enter and release the same lock at once. A release is conditional on the hold
// count the client last saw (see "Release and retries"), so the client sends the owner's commands that change that
// count one after another, per lock: a release waits for the owner's acquire attempts in flight, and an acquire for
// the owner's releases in flight or queued. Calls with owners of their own never wait for each other this way.
package rlock
