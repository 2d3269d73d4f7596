#!/usr/bin/env bash
# `make install` works as a Debian user expects (docs/cli.md "Installing"):
# install into a temporary prefix, then
#   - build examples against it with pkg-config and with find_package(paddlec)
#     and run them, with no LD_LIBRARY_PATH;
#   - the installed paddlec runs with no LD_LIBRARY_PATH (RPATH bin/../lib)
#     and uses the installed library, not the build tree's;
#   - libpaddlec.so exports the public API only (nm -D: pd_* alone);
#   - the man page and the bash completion are installed and work;
#   - `make install PREFIX=...` passes the prefix on every call.
set -euo pipefail
src=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset LD_LIBRARY_PATH
p="$tmp/prefix"
cmake --install "$build" --prefix "$p" >/dev/null
libdir=$(dirname "$(find "$p" -name 'libpaddlec.so' | head -1)")
export PKG_CONFIG_PATH="$libdir/pkgconfig"
# shellcheck disable=SC2046
cc "$src/examples/tensor_tour.c" $(pkg-config --cflags --libs paddlec) -Wl,-rpath,"$libdir" -o "$tmp/tour"
"$tmp/tour" | grep -q "shares storage: 1"
echo "ok pkg-config consumer"
mkdir "$tmp/consumer"
cat > "$tmp/consumer/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(paddlec REQUIRED)
add_executable(app "$src/examples/autograd_tour.c")
target_link_libraries(app paddlec::paddlec)
CM
cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -DCMAKE_PREFIX_PATH="$p" >/dev/null
cmake --build "$tmp/consumer/build" >/dev/null
"$tmp/consumer/build/app" | grep -q "analytic"
echo "ok find_package consumer"

# the installed program: runs without LD_LIBRARY_PATH, on the installed library
"$p/bin/paddlec" --version | grep -q "^paddlec [0-9]"
lib=$(ldd "$p/bin/paddlec" | awk '$1 ~ /^libpaddlec\.so/ {print $3}')
[ "$(realpath "$lib")" = "$(realpath "$libdir/$(basename "$lib")")" ] ||
  { echo "FAIL installed paddlec loads $lib, not the one in $libdir"; exit 1; }
readelf -d "$p/bin/paddlec" | grep -E 'R(UN)?PATH' | grep -q '\$ORIGIN/' ||
  { echo "FAIL installed paddlec has no \$ORIGIN RPATH"; exit 1; }
if readelf -d "$p/bin/paddlec" | grep -E 'R(UN)?PATH' | grep -qF "$build"; then
  echo "FAIL installed paddlec's RPATH names the build tree"; exit 1
fi
echo "ok installed paddlec finds $lib"

# exported symbols: pd_* only (the internals, pdi_*, stay inside)
leaked=$(nm -D --defined-only "$libdir/libpaddlec.so" | awk '$3 !~ /^pd_/ {print $3}')
if [ -n "$leaked" ]; then
  echo "FAIL libpaddlec.so exports $(printf '%s\n' "$leaked" | wc -l) symbols other than pd_*: $(printf '%s ' $leaked | head -c 300)"
  exit 1
fi
n=$(nm -D --defined-only "$libdir/libpaddlec.so" | grep -c ' pd_')
[ "$n" -gt 100 ] || { echo "FAIL libpaddlec.so exports only $n pd_* symbols"; exit 1; }
echo "ok libpaddlec.so exports $n symbols, all pd_*"

# the man page: every command has its section; man renders it without a warning
man1="$p/share/man/man1/paddlec.1"
[ -s "$man1" ] || { echo "FAIL no $man1"; exit 1; }
for c in $("$p/bin/paddlec" --help | awk '/^commands:/ {on=1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}'); do
  grep -q "^\.SS paddlec $c" "$man1" || { echo "FAIL man page has no section for $c"; exit 1; }
done
grep -q -- '\\-\\-steps' "$man1" || { echo "FAIL man page lacks train's --steps"; exit 1; }
if command -v groff >/dev/null; then
  warn=$(groff -man -Tutf8 -ww -z "$man1" 2>&1 || true)
  [ -z "$warn" ] || { echo "FAIL groff: $warn"; exit 1; }
fi
echo "ok man page $man1"

# bash completion: commands, then a command's options
comp="$p/share/bash-completion/completions/paddlec"
[ -s "$comp" ] || { echo "FAIL no $comp"; exit 1; }
got=$(PATH="$p/bin:$PATH" bash -c '
  source "$1"
  COMP_WORDS=(paddlec tr) COMP_CWORD=1; _paddlec; printf "%s " "${COMPREPLY[@]}"; echo
  COMP_WORDS=(paddlec train --ste) COMP_CWORD=2; _paddlec; printf "%s " "${COMPREPLY[@]}"; echo
  COMP_WORDS=(paddlec tokenizer train --voc) COMP_CWORD=3; _paddlec; printf "%s " "${COMPREPLY[@]}"' _ "$comp")
{ sed -n 1p <<<"$got" | grep -qw train && sed -n 2p <<<"$got" | grep -q -- '--steps' &&
  sed -n 3p <<<"$got" | grep -q -- '--vocab'; } || { echo "FAIL completion gave: $got"; exit 1; }
echo "ok bash completion"

# make install PREFIX=... reaches cmake --install on every call (dry run)
# (the output is captured first: grep -q quitting early would SIGPIPE make under pipefail)
dry=$(make -n -C "$src" install BUILD="$build" PREFIX="$tmp/other" 2>&1) || { echo "FAIL make -n install: $dry"; exit 1; }
grep -q -- "--install .* --prefix $tmp/other" <<<"$dry" || { echo "FAIL make install ignores PREFIX: $dry"; exit 1; }
echo "ok make install PREFIX"
