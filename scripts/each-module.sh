#!/usr/bin/env bash
# Runs a command in the directory of every Go module of the repository (every go.mod that git tracks or would
# track), root first, and fails if it fails in any. A module that a go.work at the root does not list runs with
# GOWORK=off, so nested modules work with or without a workspace.
#   scripts/each-module.sh go vet ./...
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
fail=0
while IFS= read -r mod; do
  dir=$(dirname "$mod")
  # In a workspace, go list -m names its modules (from any directory under go.work).
  self=$(cd "$dir" && GOWORK=off go list -m)
  if (cd "$dir" && go list -m 2>/dev/null) | grep -qxF "$self"; then
    work=${GOWORK:-}
  else
    work=off
  fi
  echo "== $dir: $*" >&2
  if ! (cd "$root/$dir" && GOWORK=$work "$@"); then
    echo "== $dir: FAILED: $*" >&2
    fail=1
  fi
done < <(git ls-files --cached --others --exclude-standard -- 'go.mod' '*/go.mod' |
  awk -F/ '{ print NF "\t" $0 }' | sort -n -k1,1 -k2 | cut -f2-)
exit "$fail"
