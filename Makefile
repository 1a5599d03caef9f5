# locksmith — see README.md. Every target installs what it needs (redis-server via
# apt-get when root) or says exactly what to install.
GO        ?= go
FUZZTIME  ?= 20s
# make test's fuzzing pass is a count of executions, not a duration: Go's fuzzing coordinator before Go 1.27 can
# fail a duration-bound run with a spurious "context deadline exceeded" when the time runs out on a loaded machine
# (golang/go#75804); a count has no deadline to race. About 20 s on 2 cores.
FUZZRUNS  ?= 300000x
SOAKTIME  ?= 10m
TESTFLAGS ?= -race -timeout 20m
# The targets make vet builds and vets for: a change that builds on Linux only fails here.
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 freebsd/amd64 windows/amd64

# Tools, pinned, installed into .bin (gitignored) by deps.
STATICCHECK_VERSION := v0.8.2
STATICCHECK         := $(CURDIR)/.bin/staticcheck-$(STATICCHECK_VERSION)/staticcheck

.PHONY: test bench gobench fuzz soak vet deps

deps: $(STATICCHECK)
	@bash scripts/ensure-redis.sh

$(STATICCHECK):
	GOBIN=$(dir $(STATICCHECK)) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# The subjects of new commits (scripts/check-subjects.sh), then gofmt, tidy go.mod/go.sum,
# go vet and staticcheck (also with the locksmith_portable tag), and go vet for every
# platform of PLATFORMS; in every module (scripts/vet.sh).
vet: $(STATICCHECK)
	STATICCHECK=$(STATICCHECK) PLATFORMS="$(PLATFORMS)" bash scripts/vet.sh

# The whole suite of every module under the race detector (every fuzz target's
# seed corpus runs as a test), every Go benchmark once with short windows (so that
# none stops working unseen: their figures are read from make gobench), conn again
# on its portable (non-Unix) path, then a short fuzzing pass of the RESP decoder.
test: deps vet
	bash scripts/each-module.sh $(GO) test $(TESTFLAGS) ./...
	bash scripts/each-module.sh $(GO) test $(TESTFLAGS) -short -run '^$$' -bench . -benchtime 1x ./...
	$(GO) test $(TESTFLAGS) -tags locksmith_portable ./conn
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZRUNS) ./resp

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
	$(GO) run ./internal/chaos/cmd/soak -duration $(SOAKTIME)
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
