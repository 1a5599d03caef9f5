# locksmith — see README.md. Every target installs what it needs (redis-server via
# apt-get when root) or says exactly what to install.
GO        ?= go
FUZZTIME  ?= 20s
TESTFLAGS ?= -race -timeout 20m

.PHONY: test bench gobench fuzz vet deps

deps:
	@bash scripts/ensure-redis.sh

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed on:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# The whole suite under the race detector, then a short fuzzing pass of the
# decoders (seed corpora live in testdata/fuzz).
test: deps vet
	$(GO) test $(TESTFLAGS) ./...
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME)

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./resp

# The main job: starts its own redis-server on loopback, runs every workload for
# locksmith and the peer libraries side by side with the server ceiling, prints
# the table and writes the report (JSON, HTML, Markdown) into bench-report/.
bench: deps
	$(GO) run ./bench -json bench-report/report.json -html bench-report/report.html -markdown bench-report/report.md

# Go micro-benchmarks of every package (codec, futures, wheel, transport, locks).
gobench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./...
