package rlockprom_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/locksmith-go/locksmith/adapters/rlockprom"
	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// A Client whose lock events and state a Prometheus registry exposes on /metrics.
func Example() {
	srv, err := redistest.StartServer() // a throwaway server: a service connects to its own Redis
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	metrics := rlockprom.New(rlockprom.Options{})
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: srv.Addr()}, Observer: metrics})
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
