//go:build race

package resp

// raceEnabled reports that the race detector is on; allocation counts are not asserted under it, because its
// instrumentation changes what escapes.
const raceEnabled = true
