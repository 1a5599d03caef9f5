package rlock_test

import (
	"context"
	"errors"

	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/internal/redistest"
	"github.com/locksmith-go/locksmith/rlock"
)

// Every exported method of every handle that takes a context is called with a nil context: none may panic. A nil
// held context holds nothing (Unlock: ErrNotHeld; IsHeldBy, HoldCount: not held, no error), so that
//
//	held, err := l.TryLock(ctx, 0, 0)
//	defer l.Unlock(held)
//
// is safe when the lock was not acquired; every other call reports the nil context as an *ArgumentError. The
// methods are found by reflection, so a method added later is covered without editing the test.
func TestNilContextNeverPanics(t *testing.T) {
	srv := redistest.Start(t)
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	rw := c.ReadWriteLock("nil-rw")
	handles := []any{
		c.Lock("nil-lock"), c.FairLock("nil-fair"), c.FencedLock("nil-fenced"), rw, rw.ReadLock(), rw.WriteLock(),
		rlock.NewMultiLock(c.Lock("nil-m1"), c.Lock("nil-m2")),
		rlock.NewRedLock(c.Lock("nil-r1"), c.Lock("nil-r2"), c.Lock("nil-r3")),
		c.Semaphore("nil-sem"), c.PermitExpirableSemaphore("nil-psem"), c.CountDownLatch("nil-latch"),
		c.RateLimiter("nil-rate"), c.FixedWindowLimiter("nil-window", 10, time.Second),
	}
	ctxType := reflect.TypeFor[context.Context]()
	errType := reflect.TypeFor[error]()
	calls := 0
	for _, h := range handles {
		v := reflect.ValueOf(h)
		typ := v.Type()
		for i := range typ.NumMethod() {
			m := typ.Method(i)
			mt := m.Type // receiver first
			takesCtx := false
			for j := 1; j < mt.NumIn(); j++ {
				takesCtx = takesCtx || mt.In(j) == ctxType
			}
			if !takesCtx {
				continue
			}
			name := typ.Elem().Name() + "." + m.Name
			args := []reflect.Value{}
			for j := 1; j < mt.NumIn(); j++ {
				at := mt.In(j)
				if mt.IsVariadic() && j == mt.NumIn()-1 {
					at = at.Elem() // one variadic argument
				}
				args = append(args, argFor(t, name, at))
			}
			calls++
			out, panicked := callNoPanic(v.Method(i), args)
			if panicked != nil {
				t.Errorf("%s(nil ctx) panicked: %v", name, panicked)
				continue
			}
			res, err := resultOf(t, name, out, errType)
			base := strings.TrimSuffix(m.Name, "Async")
			switch base {
			case "Unlock":
				if !errors.Is(err, rlock.ErrNotHeld) {
					t.Errorf("%s(nil) = %v, want ErrNotHeld", name, err)
				}
			case "IsHeldBy", "HoldCount":
				if err != nil || !res.IsZero() {
					t.Errorf("%s(nil) = (%v, %v), want not held and no error", name, res, err)
				}
			default:
				var ae *rlock.ArgumentError
				if !errors.As(err, &ae) || ae.Arg != "ctx" {
					t.Errorf("%s(nil ctx) = %v, want an *ArgumentError about ctx", name, err)
				}
			}
		}
	}
	if calls < 100 {
		t.Fatalf("only %d methods taking a context were found", calls)
	}

	//lint:ignore SA1012 a nil context is the point
	if id, ok := rlock.OwnerOf(nil); ok || id != "" {
		t.Errorf("OwnerOf(nil) = %q, %v; want no owner", id, ok)
	}
	//lint:ignore SA1012 a nil parent is the point
	pinned := rlock.WithOwner(nil, "42")
	if id, ok := rlock.OwnerOf(pinned); !ok || id != "42" {
		t.Errorf("OwnerOf(WithOwner(nil, 42)) = %q, %v", id, ok)
	}
	// The server saw no lock command.
	if n, err := srv.DoInt(context.Background(), "DBSIZE"); err != nil || n != 0 {
		t.Errorf("DBSIZE after the nil calls = %d, %v; want 0", n, err)
	}
}

// argFor returns an argument of type at for a call whose context is nil: valid values, so that only the context
// is at fault.
func argFor(t *testing.T, name string, at reflect.Type) reflect.Value {
	switch at {
	case reflect.TypeFor[context.Context]():
		return reflect.Zero(at)
	case reflect.TypeFor[time.Duration]():
		return reflect.ValueOf(10 * time.Millisecond)
	case reflect.TypeFor[rlock.RateConfig]():
		return reflect.ValueOf(rlock.RateConfig{Rate: 1, Interval: time.Second})
	case reflect.TypeFor[func(context.Context) error]():
		return reflect.ValueOf(func(context.Context) error {
			t.Errorf("%s ran its function with a nil context", name)
			return nil
		})
	}
	switch at.Kind() {
	case reflect.Int, reflect.Int64:
		return reflect.ValueOf(1).Convert(at)
	case reflect.String: // a well-formed permit id
		return reflect.ValueOf("0123456789abcdef0123456789abcdef").Convert(at)
	}
	t.Fatalf("%s: no argument for a parameter of type %v", name, at)
	return reflect.Value{}
}

func callNoPanic(m reflect.Value, args []reflect.Value) (out []reflect.Value, panicked any) {
	defer func() { panicked = recover() }()
	return m.Call(args), nil
}

// resultOf returns the first result and the error of a call, reading a returned future with Get.
func resultOf(t *testing.T, name string, out []reflect.Value, errType reflect.Type) (reflect.Value, error) {
	if len(out) == 1 && out[0].Kind() == reflect.Pointer && strings.HasPrefix(out[0].Type().Elem().Name(), "Future[") {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out = out[0].MethodByName("Get").Call([]reflect.Value{reflect.ValueOf(ctx)})
	}
	last := out[len(out)-1]
	if last.Type() != errType {
		t.Fatalf("%s: last result is %v, not an error", name, last.Type())
	}
	err, _ := last.Interface().(error)
	if len(out) == 1 {
		return reflect.ValueOf(struct{}{}), err
	}
	return out[0], err
}
