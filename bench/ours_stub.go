//go:build !ours

package main

import "github.com/locksmith-go/locksmith/bench/workload"

// oursFactories is empty until the ours adapters are enabled (build tag ours,
// removed once rlock and conn have landed).
func oursFactories() map[string]workload.Factory { return map[string]workload.Factory{} }
