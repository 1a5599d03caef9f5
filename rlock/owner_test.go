package rlock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestResolveOwner(t *testing.T) {
	c := &Client{id: "11111111-2222-3333-4444-555555555555"}
	bg := context.Background()

	o, err := c.resolveOwner(bg, "Lock", true)
	if err != nil || !o.fresh || o.id != c.id+":10000000001" {
		t.Fatalf("minted owner = %+v, %v", o, err)
	}
	if o2, _ := c.resolveOwner(bg, "Lock", true); o2.id == o.id {
		t.Fatal("two minted owners are equal")
	}
	if len(o.id) != 48 {
		t.Fatalf("owner id is %d bytes, want 48 (one allocation size class)", len(o.id))
	}
	if o, err := c.resolveOwner(bg, "Unlock", false); err != nil || o.id != "" {
		t.Fatalf("no owner without minting = %+v, %v", o, err)
	}

	for id, want := range map[string]string{
		"7":                             c.id + ":7",
		"other-uuid:42":                 "other-uuid:42",
		"1f0e9c3a-7b2d-4e5f:9223372036": "1f0e9c3a-7b2d-4e5f:9223372036",
	} {
		o, err := c.resolveOwner(WithOwner(bg, id), "Lock", true)
		if err != nil || o.id != want || o.fresh {
			t.Errorf("WithOwner(%q) = %+v, %v; want %s", id, o, err, want)
		}
	}
	for _, id := range []string{"", "abc", "uuid:", ":5", "uuid:-1", "uuid:12345678901234567890", "1.5"} {
		_, err := c.resolveOwner(WithOwner(bg, id), "Lock", true)
		var ae *ArgumentError
		if !errors.As(err, &ae) || !errors.Is(err, ErrInvalidArgument) || ae.Arg != "owner" {
			t.Errorf("WithOwner(%q): err = %v, want an owner *ArgumentError", id, err)
		}
	}
}

func TestOwnerOf(t *testing.T) {
	bg := context.Background()
	if _, ok := OwnerOf(bg); ok {
		t.Fatal("a plain context has an owner")
	}
	if id, ok := OwnerOf(WithOwner(bg, "3")); !ok || id != "3" {
		t.Fatalf("OwnerOf(WithOwner 3) = %q, %v", id, ok)
	}
	var held context.Context = newTestHold(bg, time.Hour)
	if id, ok := OwnerOf(held); !ok || id != "u:1" {
		t.Fatalf("OwnerOf(held) = %q, %v", id, ok)
	}
	// A context derived from a held context keeps the owner (re-entry through derived contexts).
	derived, stop := context.WithTimeout(held, 1e9)
	defer stop()
	if id, _ := OwnerOf(derived); id != "u:1" {
		t.Fatalf("OwnerOf(derived) = %q", id)
	}
}

func TestArgumentErrorMessage(t *testing.T) {
	err := leaseError("TryLock", 500_000, "must be at least 1ms, or 0 for the watchdog")
	for _, want := range []string{"rlock: TryLock", "lease", "500µs", "at least 1ms"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not contain %q", err, want)
		}
	}
}
