//go:build race

package conn_test

// raceEnabled reports that the race detector is on; allocation counts are not asserted under it, because its
// instrumentation changes what escapes.
const raceEnabled = true
