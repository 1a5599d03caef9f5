#!/usr/bin/env bash
# make vet, over every module of the repository (scripts/each-module.sh):
#   - the subjects of the commits made since the rule was set (scripts/check-subjects.sh);
#   - gofmt;
#   - go.mod and go.sum tidy (go mod tidy -diff; tidy ignores go.work, so a module needs its replace directives);
#   - go vet and staticcheck, also with the locksmith_portable tag (conn's non-Unix path, built on Linux);
#   - go vet for every target platform, so that a change that builds on Linux only cannot land.
# STATICCHECK is the staticcheck binary (the Makefile installs the pinned version); PLATFORMS overrides the targets.
set -euo pipefail
cd "$(dirname "$0")/.."
staticcheck=${STATICCHECK:?set STATICCHECK to the staticcheck binary (make vet installs it)}
platforms=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 freebsd/amd64 windows/amd64}
each=scripts/each-module.sh

bash scripts/check-subjects.sh

files=$(git ls-files --cached --others --exclude-standard -- '*.go')
unformatted=$(gofmt -l $files)
if [ -n "$unformatted" ]; then
  echo "gofmt needed on:" >&2
  echo "$unformatted" >&2
  exit 1
fi

if ! $each env GOWORK=off go mod tidy -diff; then
  echo "vet: a go.mod or go.sum is not tidy: run 'go mod tidy' in the module shown above" >&2
  exit 1
fi

$each go vet ./...
$each go vet -tags locksmith_portable ./...
$each "$staticcheck" ./...
$each "$staticcheck" -tags locksmith_portable ./...

for p in $platforms; do
  $each env GOOS="${p%/*}" GOARCH="${p#*/}" go vet ./...
done
