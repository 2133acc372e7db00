#!/bin/sh
# Writes the nested-row benchmark files with DuckDB (see make_bench.mjs).
# DuckDB's npm package is installed once into a cache directory (never into
# the repository). Usage: make_bench.sh [ROWS] [DIR]
#   default ROWS 1000000, DIR $TMPDIR/lendgraph-nested-ROWS (where the
#   BenchmarkDeliveryNested* benchmarks look).
set -eu
rows=${1:-1000000}
dir=${2:-${TMPDIR:-/tmp}/lendgraph-nested-$rows}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/lendgraph-duckdb
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$cache" "$dir"
if [ ! -d "$cache/node_modules/@duckdb/node-api" ]; then
	(cd "$cache" && { [ -f package.json ] || npm init -y >/dev/null; } && npm install --no-audit --no-fund @duckdb/node-api >/dev/null)
fi
# ESM resolves packages next to the script: run a copy from the cache.
cp "$here/make_bench.mjs" "$cache/make_bench.mjs"
dir=$(cd "$dir" && pwd)
cd "$cache" && node make_bench.mjs "$rows" "$dir"
