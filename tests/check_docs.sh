#!/usr/bin/env bash
# The code blocks marked `<!-- example: FILE -->` in docs/ must be exactly
# the example files the build compiles and CTest runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fail=0
for md in "$root"/docs/*.md; do
  { grep -o '<!-- example: [^ ]* -->' "$md" || true; } | sed 's/<!-- example: \(.*\) -->/\1/' | while read -r f; do
    block=$(awk -v tag="<!-- example: $f -->" '
      $0 == tag {want=1; next}
      want && /^```c$/ {inb=1; next}
      inb && /^```$/ {exit}
      inb {print}' "$md")
    if [ "$block" != "$(cat "$root/$f")" ]; then echo "FAIL $md: block differs from $f"; exit 1; fi
    echo "ok $md matches $f"
  done || fail=1
done
exit $fail
