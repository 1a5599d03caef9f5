package redistest

import (
	"testing"
	"time"
)

// BenchmarkStartClose measures starting a standalone server until it answers
// PING and closing it again (ms per start and per close reported separately).
func BenchmarkStartClose(b *testing.B) {
	b.ReportAllocs()
	var startD, closeD time.Duration
	for b.Loop() {
		t0 := time.Now()
		s, err := StartServer()
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		startD += t1.Sub(t0)
		closeD += time.Since(t1)
	}
	b.ReportMetric(float64(startD.Microseconds())/1000/float64(b.N), "start-ms/op")
	b.ReportMetric(float64(closeD.Microseconds())/1000/float64(b.N), "close-ms/op")
}

// BenchmarkReplicaSetStartClose measures a healthy replica set's start and
// its Close.
func BenchmarkReplicaSetStartClose(b *testing.B) {
	var startD, closeD time.Duration
	for b.Loop() {
		t0 := time.Now()
		rs, err := RunReplicaSet()
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := rs.Close(); err != nil {
			b.Fatal(err)
		}
		startD += t1.Sub(t0)
		closeD += time.Since(t1)
	}
	b.ReportMetric(float64(startD.Milliseconds())/float64(b.N), "start-ms/op")
	b.ReportMetric(float64(closeD.Milliseconds())/float64(b.N), "close-ms/op")
}

// BenchmarkClusterStartClose measures a healthy cluster's start and its
// Close.
func BenchmarkClusterStartClose(b *testing.B) {
	var startD, closeD time.Duration
	for b.Loop() {
		t0 := time.Now()
		c, err := RunCluster()
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
		startD += t1.Sub(t0)
		closeD += time.Since(t1)
	}
	b.ReportMetric(float64(startD.Milliseconds())/float64(b.N), "start-ms/op")
	b.ReportMetric(float64(closeD.Milliseconds())/float64(b.N), "close-ms/op")
}
