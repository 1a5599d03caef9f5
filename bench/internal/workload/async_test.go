package workload

import "testing"

func TestAsyncKeepsKeysInFlightFromOneGoroutine(t *testing.T) {
	lib := &memAsync{memLib: newMemLib()}
	r := run(t, lib, spec(AsyncPairs, 1, 16))
	if err := lib.Close(); err != nil {
		t.Fatal(err)
	}
	if r.Ops == 0 || r.Goroutines != 1 || r.Keys != 16 {
		t.Fatalf("ops %d, goroutines %d, keys %d", r.Ops, r.Goroutines, r.Keys)
	}
	if r.Abandoned != 0 || r.Errors != 0 {
		t.Errorf("abandoned %d, errors %d (%s)", r.Abandoned, r.Errors, r.ErrorSample)
	}
}

func TestAsyncIsNotApplicableWithoutAnAsyncAPI(t *testing.T) {
	r := run(t, newMemLib(), spec(AsyncPairs, 1, 4))
	if r.NotApplicable == "" {
		t.Fatal("a library without Async ran W5")
	}
}
