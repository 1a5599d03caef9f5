// Package redistest starts and stops real redis-server processes on loopback
// for tests, the benchmark CLI and examples.
//
// Every server runs in a fresh temporary directory on a free loopback port,
// without persistence unless asked (save "", appendonly no), in the foreground
// (daemonize no), started with exec (never through a shell). Its stdout and
// stderr go to redis.log in that directory; when a server fails to start, the
// error carries the tail of that log.
//
// # Processes
//
// A server is stopped only by its pid: Close sends SIGTERM, then SIGKILL after
// a bound, and waits for the process to exit. On Linux every child is started
// with Pdeathsig=SIGKILL, so a test binary that crashes (or is killed) takes its
// servers with it instead of leaving them listening.
//
// # Ports
//
// Ports are chosen at random below the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), so an outgoing connection of
// another test can never take a server's port while it is down for a Restart,
// and a cluster node's bus port (port+10000) stays a valid port outside that
// range too. Parallel test packages may still pick the same port: a start that
// fails to bind is retried on another port.
//
// # Topologies
//
// Start (tests) and StartServer (the bench CLI, examples) run one standalone
// server. StartReplicaSet / RunReplicaSet run a master, two replicas and three
// Sentinels; StartCluster / RunCluster run a six-node Redis Cluster (three
// masters, three replicas) created with redis-cli --cluster create. All of
// them take the same Options and clean up after themselves. The Start forms
// register Close with t.Cleanup; the others return an error and leave Close
// to the caller.
//
// Costs: a standalone server starts in tens of milliseconds and closes within
// about 100 ms (Redis handles SIGTERM at its next 100 ms cron tick); a replica
// set takes a little over 2 s to become healthy (the Sentinels' fixed 2 s hello
// period dominates) and a cluster about 3 s (redis-cli waits in 1 s steps);
// a cluster that has not formed within its bound is replaced by a new one on
// new ports, once. Figures: bench/README.md ("redistest").
//
// # Admin client
//
// (*Server).Do is a tiny RESP2 client meant for test assertions and set-up
// (HGETALL, PUBSUB CHANNELS, INFO, CLIENT KILL, SCRIPT FLUSH, DEBUG SLEEP...).
// It opens one connection per call, so it is unaffected by restarts and
// CLIENT KILL, and it shows up in CLIENT LIST only while a call runs. It is
// not the project's client and is not meant to be fast.
//
// redis-server must be installed: on Debian or Ubuntu, apt-get install -y
// redis-server (or make deps at the repository root).
package redistest
