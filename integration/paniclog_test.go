package integration

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// panicLog is a slog handler that keeps the errors a client logs about a panic it recovered (in a future callback,
// a pub/sub handler, an event hook): the client survives them, so only its log shows that one happened, and a
// panic in the package's own callbacks is a bug a test must not pass over.
type panicLog struct {
	mu      sync.Mutex
	records []string
}

func (p *panicLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }

func (p *panicLog) Handle(_ context.Context, r slog.Record) error {
	if !strings.Contains(r.Message, "panic") {
		return nil
	}
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	p.mu.Lock()
	p.records = append(p.records, b.String())
	p.mu.Unlock()
	return nil
}

func (p *panicLog) WithAttrs([]slog.Attr) slog.Handler { return p }
func (p *panicLog) WithGroup(string) slog.Handler      { return p }

// logged returns the panics recorded so far.
func (p *panicLog) logged() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.records...)
}
