#!/usr/bin/env bash
# paddle.c — checks of the source tree itself (run by CTest as check_tree):
#   1. layers: kernels include only core/kernel.h (and kernel headers), so no
#      kernel sees tensors, GradNodes, the dispatcher or the debug tools;
#      core/ includes nothing from ops/ (but the op table, ops/*.def),
#      autograd/ or above, and calls no autograd function;
#   2. line budget: no source file is longer than 1,500 lines;
#   3. comments cite only documents that are in the repository;
#   4. the library allocates through pdi_malloc & co. (src/alloc/fault.c), so
#      fault injection sees every allocation: no plain malloc, calloc,
#      realloc, strdup or strndup in src/ outside src/alloc/.
# Prints one line per violation; exits non-zero when there is one.
set -u
cd "$(dirname "$0")/.."
bad=0
fail() { echo "FAIL $*"; bad=$((bad + 1)); }

# 1. layers
while IFS= read -r line; do
    file=${line%%:*}
    inc=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$line")
    case "$inc" in
    core/kernel.h | core/attrs.h | kernels/* | pd/*) ;;
    *) fail "layers: $file includes \"$inc\" (kernels may include core/kernel.h, kernels/ and pd/ headers only)" ;;
    esac
done < <(grep -rn '#include "' src/kernels | sed -E 's/^([^:]+):[0-9]+:/\1:/')
while IFS= read -r line; do
    file=${line%%:*}
    inc=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$line")
    case "$inc" in
    core/* | pd/* | ops/*.def | kernels/families.def) ;;
    *) fail "layers: $file includes \"$inc\" (core/ may include core/, pd/ and the op table only)" ;;
    esac
done < <(grep -rn '#include "' src/core | sed -E 's/^([^:]+):[0-9]+:/\1:/')
for f in src/core/*.c; do
    if grep -nE '\b(pdi_node_[a-z_]+|pdi_autograd_[a-z_]+|pdi_engine_[a-z_]+)\s*\(' "$f" >/dev/null; then
        fail "layers: $f calls into autograd/: $(grep -nE '\b(pdi_node_[a-z_]+|pdi_autograd_[a-z_]+)\s*\(' "$f" | head -1)"
    fi
done

# 2. line budget
while IFS= read -r f; do
    n=$(wc -l <"$f")
    [ "$n" -le 1500 ] || fail "line budget: $f has $n lines (at most 1500)"
done < <(find src include tools tests bench examples scripts -type f \( -name '*.c' -o -name '*.h' -o -name '*.def' -o -name '*.py' -o -name '*.sh' \))

# 3. cited documents exist
while IFS= read -r hit; do
    file=${hit%%:*}
    doc=$(grep -oE 'docs/[A-Za-z0-9_./-]+\.md' <<<"$hit" | head -1)
    [ -n "$doc" ] && [ ! -f "$doc" ] && fail "citation: $file cites $doc, which is not in the repository"
done < <(grep -rnE 'docs/[A-Za-z0-9_./-]+\.md' src include tools tests bench examples scripts)
while IFS= read -r hit; do
    fail "citation: ${hit%%:*} cites a document outside the repository: $(cut -d: -f3- <<<"$hit" | head -c 120)"
done < <(grep -rnE '\bDESIGN\b|DESIGN\.md|specs/[a-z_]+\.md|STYLE\.md|shared/' src include tools tests bench examples scripts \
    --include='*.c' --include='*.h' --include='*.def' --include='*.py' | grep -v 'check_tree.sh')

# 4. allocations go through the fault-injection wrappers
while IFS= read -r hit; do
    fail "allocation: ${hit%%:*} calls the C allocator directly (use pdi_malloc & co.): $(cut -d: -f3- <<<"$hit" | head -c 120)"
done < <(grep -rnE '(^|[^A-Za-z0-9_.>])(malloc|calloc|realloc|strdup|strndup)[[:space:]]*\(' src --include='*.c' --include='*.h' |
    grep -v '^src/alloc/' | grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/?\*|//)')

echo "check_tree: $bad problems"
[ "$bad" -eq 0 ]
