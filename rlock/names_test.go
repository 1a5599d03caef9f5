package rlock

import "testing"

// Redisson wraps an object's name in braces (a Redis Cluster hash tag) in the names of its keys and channels, except
// when the name already contains "{": then the name is used as it is (RedissonObject.prefixName and suffixName). A
// client that wrapped such a name again would publish and subscribe on channels no Redisson client uses.
func TestNamesFollowRedissonsHashTagRule(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{channelName("orders"), "redisson_lock__channel:{orders}"},
		{channelName("{orders}:42"), "redisson_lock__channel:{orders}:42"},
		{channelName("a{b"), "redisson_lock__channel:a{b"},
		{prefixName(semChannelPrefix, "sem"), "redisson_sc:{sem}"},
		{prefixName(semChannelPrefix, "{tag}sem"), "redisson_sc:{tag}sem"},
		{prefixName(rwChannelPrefix, "{rw}"), "redisson_rwlock:{rw}"},
		{prefixName(lockTokenPrefix, "f"), "redisson_lock_token:{f}"},
		{suffixName("pes", "timeout"), "{pes}:timeout"},
		{suffixName("{tag}pes", "timeout"), "{tag}pes:timeout"},
		{suffixName(suffixName("rl", "value"), "uuid"), "{rl}:value:uuid"},
		{rwHoldPrefix("rw", "u:1"), "{rw}:u:1:rwlock_timeout"},
		{rwHoldPrefix("{t}rw", "u:1"), "{t}rw:u:1:rwlock_timeout"},
		{hashTag("rw"), "{rw}"},
		{hashTag("{t}rw"), "{t}rw"},
		// The latch is Redisson's exception: its channel wraps the name whatever it holds.
		{latchChannelName("l"), "redisson_countdownlatch__channel__{l}"},
		{latchChannelName("{t}l"), "redisson_countdownlatch__channel__{{t}l}"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}
