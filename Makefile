# locksmith — see README.md. Every target installs what it needs (redis-server via
# apt-get when root) or says exactly what to install.
GO        ?= go
FUZZTIME  ?= 20s
SOAKTIME  ?= 10m
TESTFLAGS ?= -race -timeout 20m

.PHONY: test bench gobench fuzz soak vet deps

deps:
	@bash scripts/ensure-redis.sh

# The repository is a Go workspace (go.work): the library's module at the root
# and the benchmark's (bench/, with the peer libraries) nested in it, so that the
# library's go.mod never needs the benchmark's dependencies. A pattern like
# ./... stops at a nested module: every target names both modules' trees.
MODULES_PKGS = ./... ./bench/...

vet:
	$(GO) vet $(MODULES_PKGS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed on:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# The whole suite under the race detector (every fuzz target's seed corpus runs
# as a test), then a short fuzzing pass of the RESP decoder.
test: deps vet
	$(GO) test $(TESTFLAGS) $(MODULES_PKGS)
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./resp

# Longer fuzzing of every decoder an attacker or a broken server can reach:
# make fuzz FUZZTIME=10m (corpora in each package's testdata/fuzz).
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./resp
	$(GO) test -run '^$$' -fuzz '^FuzzParseURL$$' -fuzztime $(FUZZTIME) ./conn
	$(GO) test -run '^$$' -fuzz '^FuzzScriptResults$$' -fuzztime $(FUZZTIME) ./rlock

# Ten minutes of mixed lock load with every fault kind, then the mutual-exclusion
# checker and flat resources (goroutines, heap, server keys, channels); then as
# long again of the randomized consistency test (clients and server never
# disagree about a hold under ambiguous faults), which prints its counts. Not in
# CI (CI runs the consistency test to its thresholds, about a minute).
soak: deps
	$(GO) run ./chaos/cmd/soak -duration $(SOAKTIME)
	LOCKSMITH_CONSISTENCY_DURATION=$(SOAKTIME) $(GO) test -count=1 -timeout 0 -v \
		-run '^TestConsistencyUnderAmbiguousFaults$$' ./integration

# The main job: starts its own redis-server on loopback, runs every workload for
# locksmith and the peer libraries side by side with the server ceiling, prints
# the table and writes the report (JSON, HTML, Markdown) into bench-report/.
bench: deps
	$(GO) run ./bench -json bench-report/report.json -html bench-report/report.html -markdown bench-report/report.md

# Go micro-benchmarks of every package (codec, futures, wheel, transport, locks).
gobench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./...
