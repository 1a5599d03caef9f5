//go:build unix && race

package main

// raceEnabled makes the end-to-end tests build the rlock binary with the race detector too.
const raceEnabled = true
