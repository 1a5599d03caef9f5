package scripts

// The sliding-window rate limiter's scripts, in Redisson's keyspace (RedissonRateLimiter, current layout):
//
//	config   HASH <name>: rate, interval (ms), type (0 = overall, 1 = per client), keepAliveTime (ms, 0 = none)
//	value    STRING {<name>}:value: permits left in the current window (per client: {<name>}:value:<clientUUID>)
//	permits  ZSET {<name>}:permits (per client: {<name>}:permits:<clientUUID>): one member per grant, packed as
//	         struct.pack('Bc0I', #random, random, n), scored with the instant (Unix ms) it was granted. A grant's
//	         permits come back once it is older than the interval.
//
// Instants are on the server's clock (TIME), where Redisson passes the calling client's System.currentTimeMillis():
// clients with skewed clocks would otherwise release each other's permits early or late.

// rlConfigLua reads the configuration, failing with RATENOTSET when trySetRate never ran, and selects the value
// and permits keys of the limiter's type. Prelude of the scripts below.
const rlConfigLua = `redis.replicate_commands()
local rate = redis.call('hget', KEYS[1], 'rate')
local interval = redis.call('hget', KEYS[1], 'interval')
local kind = redis.call('hget', KEYS[1], 'type')
if rate == false or interval == false or kind == false then
  return redis.error_reply('RATENOTSET the rate limiter has no rate; call TrySetRate or SetRate first')
end
rate = tonumber(rate)
interval = tonumber(interval)
local valueName, permitsName = KEYS[2], KEYS[4]
if kind == '1' then valueName, permitsName = KEYS[3], KEYS[5] end
local t = redis.call('time')
local now = ` + serverMillisLua + `
local cur = redis.call('get', valueName)
if cur == false then
  cur = rate
  redis.call('set', valueName, rate)
else
  cur = tonumber(cur)
  local old = redis.call('zrangebyscore', permitsName, 0, now - interval)
  local released = 0
  for _, v in ipairs(old) do
    local _, n = struct.unpack('Bc0I', v)
    released = released + n
  end
  if released > 0 then
    redis.call('zremrangebyscore', permitsName, 0, now - interval)
    cur = cur + released
    if cur > rate then
      local used = 0
      for _, v in ipairs(redis.call('zrange', permitsName, 0, -1)) do
        local _, n = struct.unpack('Bc0I', v)
        used = used + n
      end
      cur = rate - used
    end
    redis.call('set', valueName, cur)
  end
end
`

// rlKeepAliveLua applies the keep-alive time (or the config's own expiry) to the state keys, as Redisson does.
const rlKeepAliveLua = `local keep = redis.call('hget', KEYS[1], 'keepAliveTime')
if keep ~= false and tonumber(keep) > 0 then
  redis.call('pexpire', KEYS[1], keep)
  redis.call('pexpire', valueName, keep)
  redis.call('pexpire', permitsName, keep)
else
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then
    redis.call('pexpire', valueName, ttl)
    redis.call('pexpire', permitsName, ttl)
  end
end
`

// rlKeys describes the five keys of the sliding-window limiter's scripts, and rlRateArgs the arguments that set
// its rate.
var (
	rlKeys     = []string{"config (name)", "value", "client value", "permits", "client permits"}
	rlRateArgs = []string{"rate", "interval in milliseconds", "type (0 = overall, 1 = per client)",
		"keep-alive in milliseconds (0 = none)"}
)

// RateAcquire takes n permits if the window has them.
var RateAcquire = Script{
	Name: "ratelimiter.acquire",
	Keys: rlKeys,
	Args: []string{"permits (0 < n <= rate)", "random bytes making the grant unique"},
	Reply: "nil = taken; an integer = refused, the milliseconds until the oldest grant leaves the window (the " +
		"earliest moment permits come back); the error RATEEXCEEDED when n exceeds the rate (it could never be " +
		"granted); RATENOTSET when no rate was set",
	Source: rlConfigLua + rlAcquireLua,
}

const rlAcquireLua = `local n = tonumber(ARGV[1])
if n > rate then
  return redis.error_reply('RATEEXCEEDED the permits requested exceed the rate; they can never be granted')
end
if cur < n and redis.call('zcard', permitsName) == 0 then
  cur = rate
end
if cur < n then
  local first = redis.call('zrange', permitsName, 0, 0, 'withscores')
  return math.max(3 + interval - (now - tonumber(first[2])), 1)
end
redis.call('zadd', permitsName, now, struct.pack('Bc0I', string.len(ARGV[2]), ARGV[2], n))
redis.call('set', valueName, cur - n)
` + rlKeepAliveLua + `return nil`

// RateAvailable reports the permits left in the current window.
var RateAvailable = Script{
	Name:   "ratelimiter.available",
	Keys:   rlKeys,
	Reply:  "the number of permits available; RATENOTSET when no rate was set",
	Source: rlConfigLua + rlAvailableLua,
}

const rlAvailableLua = `return cur`

// RateTrySetRate sets the rate if none was set, as Redisson's trySetRate (each field only if absent).
var RateTrySetRate = Script{
	Name:   "ratelimiter.trysetrate",
	Keys:   []string{"config"},
	Args:   rlRateArgs,
	Reply:  "1 = set; 0 = a rate was set already",
	Source: rlTrySetLua,
}

const rlTrySetLua = `redis.call('hsetnx', KEYS[1], 'rate', ARGV[1])
redis.call('hsetnx', KEYS[1], 'interval', ARGV[2])
redis.call('hsetnx', KEYS[1], 'keepAliveTime', ARGV[4])
local res = redis.call('hsetnx', KEYS[1], 'type', ARGV[3])
if res == 1 and tonumber(ARGV[4]) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[4])
end
return res`

// RateSetRate sets the rate, replacing any, and starts a fresh window.
var RateSetRate = Script{
	Name:   "ratelimiter.setrate",
	Keys:   rlKeys,
	Args:   rlRateArgs,
	Reply:  "1",
	Source: rlSetLua,
}

const rlSetLua = `redis.call('hset', KEYS[1], 'rate', ARGV[1])
redis.call('hset', KEYS[1], 'interval', ARGV[2])
redis.call('hset', KEYS[1], 'type', ARGV[3])
redis.call('hset', KEYS[1], 'keepAliveTime', ARGV[4])
if tonumber(ARGV[4]) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[4])
else
  redis.call('persist', KEYS[1])
end
redis.call('del', KEYS[2], KEYS[3], KEYS[4], KEYS[5])
return 1`

// FixedWindow is a fixed-window limiter in the manner of the usual Redis recipe (INCR a counter per window that
// expires with the window), changed to take n permits at once; a refused call gives its permits back, so callers
// that are refused do not use up the next caller's window; the reply says when the window ends; and a counter
// found without expiry (left by something else) gets the window's.
var FixedWindow = Script{
	Name:   "ratelimiter.fixedwindow",
	Keys:   []string{"counter key"},
	Args:   []string{"permits (n > 0)", "window in milliseconds", "limit per window"},
	Reply:  "0 = taken; a positive integer = refused, the milliseconds until the window ends",
	Source: fixedWindowLua,
}

const fixedWindowLua = `local v = redis.call('incrby', KEYS[1], ARGV[1])
local ttl = redis.call('pttl', KEYS[1])
if ttl < 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
if v > tonumber(ARGV[3]) then
  redis.call('decrby', KEYS[1], ARGV[1])
  return math.max(ttl, 1)
end
return 0`
