#!/usr/bin/env bash
# Checks the subjects of the commits reachable from HEAD but not from a base commit (make vet runs it): each must be
# at most 72 characters and of the form "pkg: what changed", where pkg is a path or a comma-separated list of them
# ("rlock: ...", "docs, cmd/rlock: ..."); a merge commit's "Merge ..." subject needs no pkg. The offending commits are
# listed and the script fails.
#
#   scripts/check-subjects.sh [BASE]
#
# BASE defaults to the commit from which the rule is enforced: older commits keep their subjects, since landed
# history is never rewritten. The repository is the one holding the current directory. Without git, outside a
# repository (a source tarball) or without BASE in the history (a shallow clone), it warns and checks nothing.
set -euo pipefail

base=${1:-4b83c048e0c61c964aa0d5e2c6e6e801887f9a75}
max=72

warn() { echo "check-subjects: $*; commit subjects not checked" >&2; }

if ! command -v git >/dev/null 2>&1; then
  warn "git is not installed"
  exit 0
fi
if ! git rev-parse --verify --quiet HEAD >/dev/null 2>&1; then
  warn "no git history here (a source tarball?)"
  exit 0
fi
if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
  warn "the base commit $base is not in the history (a shallow clone? fetch with --unshallow)"
  exit 0
fi

# pkg: a path (letters, digits, . _ - /), or several separated by ", "; then ": " and the change, not empty.
path='[A-Za-z0-9._/-]+'
form="^$path(, $path)*: [^ ].*"

# chars counts the characters of a UTF-8 string whatever the locale: every byte but the continuation bytes.
chars() { printf '%s' "$1" | LC_ALL=C tr -d '\200-\277' | wc -c | tr -d ' '; }

bad=0
while IFS=$'\t' read -r hash parents subject; do
  problems=()
  n=$(chars "$subject")
  if [ "$n" -gt "$max" ]; then
    problems+=("$n characters, over $max")
  fi
  merge=0
  case "$parents" in *' '*) merge=1 ;; esac
  if ! { [ "$merge" = 1 ] && [[ $subject == "Merge "* ]]; } && ! [[ $subject =~ $form ]]; then
    problems+=('not of the form "pkg: what changed"')
  fi
  if [ ${#problems[@]} -gt 0 ]; then
    if [ "$bad" = 0 ]; then
      echo "check-subjects: commit subjects must be at most $max characters, of the form \"pkg: what changed\":" >&2
    fi
    bad=1
    reasons=$(printf '%s; ' "${problems[@]}")
    echo "  $hash $subject (${reasons%; })" >&2
  fi
done < <(git log --format='%h%x09%p%x09%s' "$base..HEAD")
exit "$bad"
