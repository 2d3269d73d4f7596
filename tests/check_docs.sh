#!/usr/bin/env bash
# Two checks that the documentation says what the code does.
#
#   check_docs.sh                      (CTest: docs_examples)
# The code blocks marked `<!-- example: FILE -->` in docs/ must be exactly
# the example files the build compiles and CTest runs, and the headline
# figures of README.md, docs/cli.md and docs/training.md must agree.
#
#   check_docs.sh --commands BUILD     (CTest: docs_commands)
# Every command of the ```sh blocks of README.md, docs/cli.md and
# docs/training.md runs as written, shortened: in a scratch directory that
# holds build/paddlec (BUILD's program) and links to the rest of the source
# tree (docs/, tests/fixtures/, ...), with /tmp/ moved into it,
# step counts and checkpoint periods divided by 100 (checkpoint names too, so
# a resume finds its file), a train without --steps given --steps 4, and
# fewer held-out problems. `make run` runs as the training command it is
# (Makefile); other `make ...` lines are not run (they build). A
# block is run by bash with -e: its first failing command fails the check.
# Blocks meant as output or failing commands go in plain ``` blocks.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

if [ "${1:-}" = --commands ]; then
  build=$(cd "$2" && pwd)
  [ -x "$build/paddlec" ] || { echo "no $build/paddlec"; exit 1; }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  fail=0
  for md in README.md docs/cli.md docs/training.md; do
    box="$tmp/$(basename "$md" .md)"   # one scratch directory per page, its blocks in order
    mkdir -p "$box/build" "$box/tmp"
    n=0
    ln -s "$build/paddlec" "$box/build/paddlec"
    for e in "$root"/*; do   # the tree as seen from its root (links), but build/ is the scratch one
      case $(basename "$e") in build*) ;; *) ln -s "$e" "$box/" ;; esac
    done
    head -c 20000 "$root/docs/training.md" >"$box/my_text.txt"   # README's "your own text"
    # the blocks, NUL-separated, continuation lines joined
    awk '/^```sh$/ {inb=1; next} inb && /^```$/ {inb=0; printf "%c", 0; next}
         inb { if (sub(/\\$/, "")) { printf "%s", $0; next } print }' "$root/$md" >"$tmp/blocks"
    while IFS= read -r -d '' block; do
      # shorten (perl is Essential in Debian): see the comment at the top
      script=$(printf '%s\n' "$block" | T="$box/tmp/" perl -pe '
        next if /^\s*(#|$)/;
        s{^make run\b}{build/paddlec train --out build/paddlec-out};   # what make run runs
        if (/^\s*make\b/) { $_ = "# (not run) $_"; next }
        s{(?<![\w.-])/tmp/}{$ENV{T}}g;
        s{(--(?:steps|ckpt-every|eval-every)[ =])(\d+)}{$1 . ($2 >= 200 ? int($2 / 100) : 2)}ge;
        s{(ckpt-)(\d+)(\.safetensors)}{$1 . ($2 >= 200 ? int($2 / 100) : 2) . $3}ge;
        if (m{build/paddlec train\b} && !/--resume/) {
          s{(build/paddlec train)}{$1 --steps 4} unless /--steps/;
          s{(build/paddlec train)}{$1 --task-n 5} unless /--data/;
        }
        s{(build/paddlec eval\b)}{$1 --task-n 5 --batches 2};
      ')
      n=$((n+1))
      if (cd "$box" && bash -eo pipefail -c "$script") >"$tmp/out" 2>&1; then
        echo "ok $md block $n"
      else
        echo "FAIL $md block $n:"; printf '%s\n' "$script" | sed 's/^/    /'
        tail -5 "$tmp/out" | sed 's/^/  | /'
        fail=1
      fi
    done <"$tmp/blocks"
  done
  exit $fail
fi

fail=0
# The headline figures (the paragraph that starts "`paddlec train` with the
# default recipe") are the same in README.md, docs/cli.md and docs/training.md.
figures() { awk '/^`paddlec train` with the default recipe/ {on=1} on && /^$/ {exit} on' "$root/$1" | tr -s ' \n' '  '; }
want=$(figures README.md)
[ -n "$want" ] || { echo "FAIL README.md: no headline figures paragraph"; fail=1; }
for md in docs/cli.md docs/training.md; do
  if [ "$(figures "$md")" != "$want" ]; then echo "FAIL $md: headline figures differ from README.md's"; fail=1
  else echo "ok $md: headline figures as README.md's"; fi
done
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
