#!/bin/sh
# Writes the DuckDB test files of this directory (see make_nested.mjs and
# make_parquet.mjs). DuckDB's npm package is installed once into a cache
# directory, never into the repository.
set -eu
cache=${XDG_CACHE_HOME:-$HOME/.cache}/lendgraph-duckdb
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$cache"
if [ ! -d "$cache/node_modules/@duckdb/node-api" ]; then
	(cd "$cache" && { [ -f package.json ] || npm init -y >/dev/null; } && npm install --no-audit --no-fund @duckdb/node-api >/dev/null)
fi
# ESM resolves packages next to the script: run copies from the cache.
cp "$here/make_nested.mjs" "$here/make_parquet.mjs" "$cache/"
cd "$cache" && node make_nested.mjs "$here" && node make_parquet.mjs "$here/agents.parquet"
