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
