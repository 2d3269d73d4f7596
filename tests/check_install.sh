#!/usr/bin/env bash
# `make install` works for another project: install into a temporary
# prefix, then build an example against it with pkg-config and with
# find_package(paddlec), and run both.
set -euo pipefail
src=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc "$src/examples/tensor_tour.c" $(pkg-config --cflags --libs paddlec) -Wl,-rpath,"$tmp/prefix/lib" -o "$tmp/tour"
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
cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer/build" >/dev/null
"$tmp/consumer/build/app" | grep -q "analytic"
echo "ok find_package consumer"
