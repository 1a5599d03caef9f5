package main

import (
	"testing"

	"go.uber.org/goleak"
)

// Every client the tests build is closed by the end of its test: nothing the
// tests start may outlive them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}
