package scripts

// The count-down latch's scripts, in Redisson's keyspace (RedissonCountDownLatch):
//
//	count    STRING <name>: the remaining count; absent = open (zero); Delete runs DeletePublish
//	channel  redisson_countdownlatch__channel__{<name>}: "0" when the count reached zero (wakes every awaiter),
//	         "1" when a new count was set or the latch deleted (awaiters re-check)

// LatchTrySetCount sets the count if the latch is open (absent).
var LatchTrySetCount = Script{
	Name:   "countdownlatch.trysetcount",
	Keys:   []string{"latch name", "channel (redisson_countdownlatch__channel__{name})"},
	Args:   []string{"count (> 0)", "message (\"1\")", publishArg},
	Reply:  "1 = set; 0 = a count is already set",
	Source: publishing(latchTrySetLua),
}

const latchTrySetLua = `if redis.call('exists', KEYS[1]) == 1 then return 0 end
redis.call('set', KEYS[1], ARGV[1])
pub(KEYS[2], ARGV[2])
return 1`

// LatchCountDown decrements the count; at zero it deletes the latch and wakes every awaiter.
var LatchCountDown = Script{
	Name:   "countdownlatch.countdown",
	Keys:   []string{"latch name", "channel"},
	Args:   []string{"message (\"0\")", publishArg},
	Reply:  "the count afterwards (0 when the latch opened or was open; never negative)",
	Source: publishing(latchCountDownLua),
}

const latchCountDownLua = `if redis.call('exists', KEYS[1]) == 0 then return 0 end
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
	LatchZeroMessage = "0"
	LatchSetMessage  = "1"
)
