package rlockotel_test

import (
	"context"
	"fmt"
	"os"

	"github.com/locksmith-go/locksmith/adapters/rlockotel"
	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/rlock"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A Client whose acquires and unlocks are spans of the caller's trace. A service passes its own providers (or
// none: the global ones), with exporters to its collector; here an in-memory exporter shows the spans. The Redis
// server's address comes from LOCKSMITH_REDIS_ADDR (default 127.0.0.1:6379).
func Example() {
	addr := os.Getenv("LOCKSMITH_REDIS_ADDR") // a service reads its own configuration
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())

	obs, err := rlockotel.New(rlockotel.Options{TracerProvider: tp})
	if err != nil {
		panic(err)
	}
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: addr}, Observer: obs})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	obs.Watch(c)

	ctx, request := tp.Tracer("example").Start(context.Background(), "handle order")
	l := c.Lock("orders:42")
	held, err := l.Lock(ctx)
	if err != nil {
		panic(err)
	}
	if err := l.Unlock(held); err != nil {
		panic(err)
	}
	request.End()

	for _, s := range spans.GetSpans() {
		for _, a := range s.Attributes {
			if a.Key == rlockotel.KeyLockName {
				fmt.Println(s.Name, a.Value.AsString(), "child of the request:", s.Parent.SpanID() == request.SpanContext().SpanID())
			}
		}
	}
	// Output:
	// rlock.acquire orders:42 child of the request: true
	// rlock.unlock orders:42 child of the request: true
}
