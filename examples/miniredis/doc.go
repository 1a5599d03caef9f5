// Package miniredis shows how to unit-test code that takes locksmith locks without a Redis server:
// github.com/alicebob/miniredis/v2 runs in the test process and executes the lock scripts (Lua, EVALSHA),
// PUBLISH/SUBSCRIBE and TIME, so rlock's Lock, TryLock and Unlock, the fair, fenced and read-write locks, MultiLock,
// the semaphores, CountDownLatch and FixedWindowLimiter work against it. RateLimiter does not (its scripts use Lua's
// struct library, which miniredis lacks), WAIT finds no replicas, and keys expire only when the test moves
// miniredis's clock (FastForward), not as real time passes.
package miniredis
