package conn

import "strings"

// SlotCount is the number of hash slots of a Redis Cluster.
const SlotCount = 16384

// crcTable is the CRC-16/XMODEM table (polynomial 0x1021, no reflection, initial value 0): the CRC Redis Cluster
// uses for key slots. Built once at start-up from the polynomial.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// crc16 returns the CRC-16/XMODEM of s.
func crc16(s string) uint16 {
	var c uint16
	for i := 0; i < len(s); i++ {
		c = c<<8 ^ crcTable[byte(c>>8)^s[i]]
	}
	return c
}

// KeySlot returns the Redis Cluster hash slot of key (0..SlotCount-1), exactly as Redis computes it: the CRC-16 of
// the key modulo 16384, or of its hash tag when it has one. The hash tag is the part between the first '{' and the
// first '}' after it, when that part is non-empty; "{user1}.a" and "{user1}.b" share a slot, while "{}x", "x{" and
// "a{}{b}" are hashed whole. Keys that must go into one command (one EVALSHA) in a cluster need one slot: give them
// one hash tag, as Redisson's channel names do ("redisson_lock__channel:{name}"). It does not block, allocates
// nothing, and is safe for concurrent use.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) & (SlotCount - 1))
}

// keylessCommands are the commands, among those a lock client, the CLI and an operator use, that name no key: a
// cluster Client sends them to any master. Every other plain command is routed by its first argument.
var keylessCommands = [...]string{
	"ACL", "ASKING", "AUTH", "BGREWRITEAOF", "BGSAVE", "CLIENT", "CLUSTER", "COMMAND", "CONFIG", "DBSIZE", "DEBUG",
	"DISCARD", "ECHO", "EXEC", "FLUSHALL", "FLUSHDB", "FUNCTION", "HELLO", "INFO", "KEYS", "LASTSAVE", "LATENCY",
	"LOLWUT", "MEMORY", "MONITOR", "MULTI", "OBJECT", "PING", "PUBLISH", "PUBSUB", "QUIT", "RANDOMKEY", "READONLY",
	"READWRITE", "RESET", "ROLE", "SAVE", "SCAN", "SCRIPT", "SELECT", "SHUTDOWN", "SLOWLOG", "SWAPDB", "TIME",
	"UNWATCH", "WAIT", "WAITAOF",
}

// commandKey returns the key a plain command is routed by in a cluster: for EVAL, EVALSHA, EVAL_RO, EVALSHA_RO,
// FCALL and FCALL_RO the first key after numkeys (none when numkeys is 0); none for the keyless commands above; else
// args[1] (GET key, HGET key field, SET key value, PTTL key, EXISTS key..., SPUBLISH channel...). ok is false when
// the command has no key. For a command whose first key is elsewhere, use Client.DoKey. Allocates nothing.
func commandKey(args []string) (key string, ok bool) {
	if len(args) < 2 {
		return "", false
	}
	name := args[0]
	switch len(name) {
	case 4, 5, 7, 8, 10:
		if strings.EqualFold(name, "EVAL") || strings.EqualFold(name, "EVALSHA") || strings.EqualFold(name, "EVAL_RO") ||
			strings.EqualFold(name, "EVALSHA_RO") || strings.EqualFold(name, "FCALL") || strings.EqualFold(name, "FCALL_RO") {
			if len(args) < 4 || args[2] == "0" {
				return "", false
			}
			return args[3], true
		}
	}
	for _, k := range keylessCommands {
		if len(k) == len(name) && strings.EqualFold(k, name) {
			return "", false
		}
	}
	return args[1], true
}
