package sample

import (
	"math"
	"testing"
	"time"
)

const procStat = `cpu  1000 50 400 8000 100 10 20 5 30 0
cpu0 500 25 200 4000 50 5 10 2 15 0
cpu1 500 25 200 4000 50 5 10 3 15 0
intr 123
`

func TestParseProcStatSumsBusyTicksWithoutDoubleCountingGuests(t *testing.T) {
	m, err := ParseProcStat(procStat)
	if err != nil {
		t.Fatal(err)
	}
	// busy = user 1000 + nice 50 + system 400 + irq 10 + softirq 20 + steal 5 (guest is inside user)
	if m.Busy != 1485 || m.Total != 1485+8000+100 {
		t.Fatalf("got %+v", m)
	}
	if _, err := ParseProcStat("intr 1\n"); err == nil {
		t.Fatal("no error without a cpu line")
	}
}

func TestBusyCoresScalesTheBusyShareByTheCoreCount(t *testing.T) {
	a := Machine{Busy: 1000, Total: 10000}
	b := Machine{Busy: 1150, Total: 10200} // 150 of 200 ticks busy
	if got := BusyCores(a, b, 2); got != 1.5 {
		t.Fatalf("BusyCores = %v, want 1.5", got)
	}
	if got := BusyCores(b, a, 2); got != 0 {
		t.Fatalf("BusyCores backwards = %v, want 0", got)
	}
}

const info = "# Server\r\nredis_version:7.0.15\r\nprocess_id:4242\r\n\r\n# CPU\r\nused_cpu_sys:1.500000\r\n" +
	"used_cpu_user:2.250000\r\n\r\n# Commandstats\r\n" +
	"cmdstat_evalsha:calls=100,usec=500,usec_per_call=5.00,rejected_calls=0,failed_calls=0\r\n" +
	"cmdstat_hincrby:calls=300,usec=300,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n" +
	"cmdstat_info:calls=7,usec=70,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n" +
	"cmdstat_client|setinfo:calls=2,usec=2,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n"

func TestParseInfoReadsCPUAndCommandCalls(t *testing.T) {
	s, err := ParseInfo(info)
	if err != nil {
		t.Fatal(err)
	}
	if s.PID != 4242 || s.Version != "7.0.15" || s.CPU != 3750*time.Millisecond {
		t.Fatalf("got pid %d version %q cpu %v", s.PID, s.Version, s.CPU)
	}
	if s.Calls["evalsha"] != 100 || s.Calls["hincrby"] != 300 || s.Calls["client|setinfo"] != 2 {
		t.Fatalf("calls %v", s.Calls)
	}
	if _, err := ParseInfo("cmdstat_get:usec=1\r\n"); err == nil {
		t.Fatal("no error for a commandstat without calls")
	}
}

func TestBetweenComputesRatesAndRemovesTheSamplersOwnInfo(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := Point{At: t0, Machine: Machine{Busy: 0, Total: 0},
		Server: Server{CPU: time.Second, Calls: map[string]int64{"evalsha": 10, "info": 5}}}
	b := Point{At: t0.Add(2 * time.Second), Machine: Machine{Busy: 300, Total: 400},
		Server: Server{CPU: 2 * time.Second, Calls: map[string]int64{"evalsha": 110, "hexists": 100, "info": 6}}}
	w := Between(a, b, 2)
	if w.Wall != 2*time.Second || w.ServerCores != 0.5 || w.MachineCores != 1.5 {
		t.Fatalf("wall %v server %v machine %v", w.Wall, w.ServerCores, w.MachineCores)
	}
	if w.Calls["info"] != 0 || w.TotalCalls != 200 || w.Sum("evalsha", "eval") != 100 {
		t.Fatalf("calls %v total %d", w.Calls, w.TotalCalls)
	}
	// machine 1.5 = client 0.7 + server 0.5 + other 0.3
	if got := w.Other(0.7, true); math.Abs(got-0.3) > 1e-9 {
		t.Fatalf("other = %v, want 0.3", got)
	}
	// A remote server's CPU is not part of this machine's.
	if got := w.Other(0.7, false); math.Abs(got-0.8) > 1e-9 {
		t.Fatalf("other (remote server) = %v, want 0.8", got)
	}
}

func TestReadMachineWorksHere(t *testing.T) {
	m, err := ReadMachine()
	if err != nil {
		t.Skipf("no /proc/stat: %v", err)
	}
	if m.Total == 0 || m.Busy > m.Total {
		t.Fatalf("implausible reading %+v", m)
	}
}
