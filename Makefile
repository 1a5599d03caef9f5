# locksmith — see README.md. Every target installs what it needs (redis-server via
# apt-get when root) or says exactly what to install.
GO        ?= go
FUZZTIME  ?= 20s
TESTFLAGS ?= -race -timeout 20m

.PHONY: test bench fuzz vet deps

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

bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./...
