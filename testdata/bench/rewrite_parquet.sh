#!/bin/sh
# Rewrites a parquet file with DuckDB (see rewrite_parquet.mjs): the
# parquet MinIO benchmark's files of another writer. DuckDB's npm package is
# installed once into a cache directory (never into the repository).
# Usage: rewrite_parquet.sh IN OUT [ROWS_PER_ROW_GROUP]
set -eu
cache=${XDG_CACHE_HOME:-$HOME/.cache}/lendgraph-duckdb
here=$(cd "$(dirname "$0")" && pwd)
in=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
mkdir -p "$cache"
if [ ! -d "$cache/node_modules/@duckdb/node-api" ]; then
	(cd "$cache" && { [ -f package.json ] || npm init -y >/dev/null; } && npm install --no-audit --no-fund @duckdb/node-api >/dev/null)
fi
# ESM resolves packages next to the script: run a copy from the cache.
cp "$here/rewrite_parquet.mjs" "$cache/rewrite_parquet.mjs"
cd "$cache" && node rewrite_parquet.mjs "$in" "$out" ${3:-}
