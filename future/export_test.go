package future

// ParkedGets reports how many Get calls are parked on f. Tests use it to await
// the moment a Get has registered instead of sleeping.
func ParkedGets[T any](f *Future[T]) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for w := f.waiters; w != nil; w = w.next {
		n++
	}
	return n
}

// MarkedGoroutines reports how many goroutines run a callback now (see InCallback): 0 once every callback has
// returned, also by a panic.
func MarkedGoroutines() int { return int(marked.Load()) }
