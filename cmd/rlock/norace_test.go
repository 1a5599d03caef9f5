//go:build unix && !race

package main

const raceEnabled = false
