package rlockprom_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/locksmith-go/locksmith/adapters/rlockprom"
	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/rlock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// A Client whose lock events and state a Prometheus registry exposes on /metrics. The Redis server's address comes
// from LOCKSMITH_REDIS_ADDR (default 127.0.0.1:6379).
func Example() {
	addr := os.Getenv("LOCKSMITH_REDIS_ADDR") // a service reads its own configuration
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	metrics := rlockprom.New(rlockprom.Options{})
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: addr}, Observer: metrics})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	metrics.Watch(c)
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics)
	web := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})) // a service: http.Handle("/metrics", ...)
	defer web.Close()

	l := c.Lock("orders:42")
	held, err := l.Lock(context.Background())
	if err != nil {
		panic(err)
	}
	if err := l.Unlock(held); err != nil {
		panic(err)
	}

	resp, err := http.Get(web.URL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		for _, metric := range []string{"locksmith_acquire_wait_seconds_count", "locksmith_grants_orphaned_total",
			"locksmith_locks_held", "locksmith_releases_total"} {
			if strings.HasPrefix(line, metric) {
				fmt.Println(line)
			}
		}
	}
	// Output:
	// locksmith_acquire_wait_seconds_count{outcome="acquired"} 1
	// locksmith_grants_orphaned_total{outcome="expired"} 0
	// locksmith_grants_orphaned_total{outcome="released"} 0
	// locksmith_locks_held 0
	// locksmith_releases_total{result="released"} 1
}
