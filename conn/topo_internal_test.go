package conn

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/resp"
)

// decodeAll decodes one RESP2 frame written with '|' for CRLF.
func decodeAll(t *testing.T, s string) resp.Value {
	t.Helper()
	var d resp.Decoder
	v, n, err := d.Decode([]byte(strings.ReplaceAll(s, "|", "\r\n")))
	if err != nil || n != len(strings.ReplaceAll(s, "|", "\r\n")) {
		t.Fatalf("decode: %v (%d bytes)", err, n)
	}
	return v
}

// CLUSTER SLOTS, as Redis 6 and 7 send it: ranges of one master listed separately, an empty host meaning the
// queried node's, "?" an unknown endpoint (skipped).
func TestParseSlots(t *testing.T) {
	v := decodeAll(t, "*3|"+
		"*4|:0|:99|*3|$8|10.0.0.1|:7000|$2|id|*3|$8|10.0.0.2|:7001|$2|id|"+
		"*3|:100|:199|*3|$0||:7002|$2|id|"+
		"*4|:200|:299|*3|$8|10.0.0.1|:7000|$2|id|*3|$1|?|:7003|$2|id|")
	got, err := parseSlots(&v, "192.168.1.9")
	if err != nil {
		t.Fatal(err)
	}
	want := &slotMap{shards: []shardInfo{
		{master: "10.0.0.1:7000", replicas: []string{"10.0.0.2:7001"}, ranges: [][2]int{{0, 99}, {200, 299}}},
		{master: "192.168.1.9:7002", ranges: [][2]int{{100, 199}}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseSlots =\n%+v\nwant\n%+v", got, want)
	}
	bad := decodeAll(t, "*1|*3|:5|:2|*2|$1|h|:1|")
	if _, err := parseSlots(&bad, "h"); err == nil {
		t.Fatal("a range 5-2 was accepted")
	}
}

// CLUSTER SHARDS, Redis 7: the online master wins over a failed one, TLS ports are used over TLS, shards without
// slots are kept (apply skips them).
func TestParseShards(t *testing.T) {
	node := func(ip, port, tlsPort, role, health string) string {
		return "*12|$2|ip|$" + strconv.Itoa(len(ip)) + "|" + ip + "|$4|port|:" + port + "|$8|tls-port|:" + tlsPort +
			"|$4|role|$" + strconv.Itoa(len(role)) + "|" + role + "|$6|health|$" + strconv.Itoa(len(health)) + "|" + health +
			"|$8|endpoint|$" + strconv.Itoa(len(ip)) + "|" + ip + "|"
	}
	v := decodeAll(t, "*2|"+
		"*4|$5|slots|*4|:0|:10|:20|:30|$5|nodes|*3|"+
		node("10.0.0.1", "7000", "8000", "master", "fail")+
		node("10.0.0.2", "7001", "8001", "master", "online")+
		node("10.0.0.3", "7002", "8002", "replica", "online")+
		"*4|$5|slots|*0|$5|nodes|*0|")
	got, err := parseShards(&v, "h", true)
	if err != nil {
		t.Fatal(err)
	}
	want := &slotMap{shards: []shardInfo{
		{master: "10.0.0.2:8001", replicas: []string{"10.0.0.3:8002"}, ranges: [][2]int{{0, 10}, {20, 30}}},
		{},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseShards =\n%+v\nwant\n%+v", got, want)
	}
}

// The retry delays double from 10 ms to the cap, and their sum is what retryLater compares with RetryTimeout.
func TestRetryDelays(t *testing.T) {
	var sum time.Duration
	for n := range 12 {
		d, waited := retryDelay(n)
		if waited != sum {
			t.Fatalf("retryDelay(%d) waited %v, want %v", n, waited, sum)
		}
		if want := min(retryMinDelay<<n, retryMaxDelay); d != want {
			t.Fatalf("retryDelay(%d) = %v, want %v", n, d, want)
		}
		sum += d
	}
}

// Redirections parse; an empty host (a node that does not know its address) is refused.
func TestParseRedirect(t *testing.T) {
	if slot, addr, ok := parseRedirect("MOVED 3999 127.0.0.1:6381"); !ok || slot != 3999 || addr != "127.0.0.1:6381" {
		t.Fatalf("MOVED: %d %q %v", slot, addr, ok)
	}
	for _, bad := range []string{"ASK 3999 :6381", "MOVED x 1:2", "MOVED 16384 h:1", "MOVED 1"} {
		if _, _, ok := parseRedirect(bad); ok {
			t.Errorf("parseRedirect(%q) accepted", bad)
		}
	}
}

// commandKey finds the routing key of the commands rlock and the CLI send, and none for keyless ones.
func TestCommandKey(t *testing.T) {
	for _, c := range []struct {
		args []string
		key  string
		ok   bool
	}{
		{[]string{"HGET", "lock", "f"}, "lock", true},
		{[]string{"pttl", "lock"}, "lock", true},
		{[]string{"EVALSHA", "sha", "2", "k1", "k2", "a"}, "k1", true},
		{[]string{"eval", "src", "0", "a"}, "", false},
		{[]string{"FCALL_RO", "f", "1", "k"}, "k", true},
		{[]string{"SPUBLISH", "ch", "m"}, "ch", true},
		{[]string{"PUBLISH", "ch", "m"}, "", false},
		{[]string{"wait", "1", "100"}, "", false},
		{[]string{"PING"}, "", false},
		{[]string{"CLUSTER", "KEYSLOT", "x"}, "", false},
	} {
		if key, ok := commandKey(c.args); key != c.key || ok != c.ok {
			t.Errorf("commandKey(%q) = %q, %v; want %q, %v", c.args, key, ok, c.key, c.ok)
		}
	}
}
