package rlock

// The count-down latch's scripts, in Redisson's keyspace (RedissonCountDownLatch):
//
//	count    STRING <name>: the remaining count; absent = open (zero); Delete runs deletePublishSrc
//	channel  redisson_countdownlatch__channel__{<name>}: "0" when the count reached zero (wakes every awaiter),
//	         "1" when a new count was set or the latch deleted (awaiters re-check)

// latchTrySetSrc sets the count if the latch is open (absent).
//
//	KEYS[1] latch name
//	KEYS[2] channel
//	ARGV[1] count (> 0)
//	ARGV[2] message ("1")
//	last ARGV: the publish command (publishLua)
//
// Reply: 1 = set; 0 = a count is already set.
const latchTrySetSrc = publishLua + `if redis.call('exists', KEYS[1]) == 1 then return 0 end
redis.call('set', KEYS[1], ARGV[1])
pub(KEYS[2], ARGV[2])
return 1`

// latchCountDownSrc decrements the count; at zero it deletes the latch and wakes every awaiter.
//
//	KEYS[1] latch name
//	KEYS[2] channel
//	ARGV[1] message ("0")
//	last ARGV: the publish command (publishLua)
//
// Reply: the count afterwards (0 when the latch opened or was open; never negative).
const latchCountDownSrc = publishLua + `if redis.call('exists', KEYS[1]) == 0 then return 0 end
local v = redis.call('decr', KEYS[1])
if v <= 0 then
  redis.call('del', KEYS[1])
  pub(KEYS[2], ARGV[1])
  return 0
end
return v`

// The latch's messages, as Redisson's CountDownLatchPubSub: the count reached zero, or a count was set (or the
// latch deleted) and awaiters should look again.
const (
	latchZeroMessage = "0"
	latchSetMessage  = "1"
)

var (
	latchTrySetScript    = newScript(latchTrySetSrc)
	latchCountDownScript = newScript(latchCountDownSrc)
)
