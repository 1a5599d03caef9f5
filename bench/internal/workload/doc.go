// Package workload is the benchmark's measuring side: the lock workloads, the
// adapter interfaces a lock library implements to be measured, and the record
// each case produces. It is a public package of the locksmith module so that
// the peers module (bench/peers, a separate Go module that pins the other
// libraries) can import it through a replace directive, and both binaries run
// exactly the same workload code.
//
// # Adapters
//
// A Library blocks in Lock and returns a Held to Unlock. Optional interfaces
// add what some workloads need: Watchdog (W3: keep a lock alive while held),
// OwnershipChecker (W3: check on the server), Async (W5: callbacks instead of
// blocking) and CommandCounter (client-side command counts). A library that
// lacks one is reported "not applicable" for that workload rather than
// emulated. RawLock turns a bare Transport (EVALSHA + SUBSCRIBE) into a
// Library with Redisson's protocol: the raw baselines.
//
// # Workloads
//
//	W1  G goroutines, each locking and unlocking its own key; one op = one pair.
//	W2  G goroutines on K keys (goroutine i uses key i%K), blocking acquire, no
//	    think time; a critical section that detects overlaps (an atomic holder
//	    count, and a counter incremented by a separate load and store); fairness
//	    (Jain index of per-goroutine acquisitions, share of re-acquisitions by
//	    the previous holder, goroutines still waiting after 1 s).
//	W3  N locks taken under the library's watchdog, held, checked (library and
//	    server), released; goroutines, heap and stacks per lock.
//	W4  G goroutines on one key; a releaser waits until another goroutine holds
//	    the lock, so every acquisition is a hand-off; latency from just before
//	    Unlock to the next Lock returning.
//	W5  one goroutine keeping K pairs in flight through the async API.
//	raw W1's loop on a Transport.
//
// # Window
//
// Every case warms up, then opens a measurement window, then closes it; only
// operations completing inside the window count. Window.Begin and Window.End
// let an orchestrator in another process sample the server (INFO) and the
// machine (/proc/stat) at the edges: CaseMain implements that handshake over
// standard input and output. Operations still in flight longer than StallAge
// when the window closes are reported (stalled, waiting), and workers that do
// not return StopGrace after being told to stop are abandoned and reported, so
// a library that hangs cannot hang the benchmark.
//
// # Statistics
//
// Latencies go into HDR histograms (github.com/HdrHistogram/hdrhistogram-go:
// 1 µs to 100 s, 3 significant digits, a few shards behind mutexes), from
// which come the percentiles, a CDF and a log-binned histogram; the exact
// maximum is kept beside them. Client CPU is getrusage over the window.
package workload
