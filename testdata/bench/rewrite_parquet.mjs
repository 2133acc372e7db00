// Rewrites a parquet file with DuckDB (npm @duckdb/node-api): the same
// rows, in order, written by a writer other than the fake's, snappy, in
// row groups of ROWS rows (DuckDB's default, 122,880, when not given).
//
//   testdata/bench/rewrite_parquet.sh IN OUT [ROWS]
import { DuckDBInstance } from '@duckdb/node-api';

const [input, output, rows] = process.argv.slice(2);
if (!input || !output) {
  console.error('usage: rewrite_parquet.sh IN OUT [ROWS]');
  process.exit(2);
}
const q = (s) => `'${s.replaceAll("'", "''")}'`;
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
await c.run(`SET preserve_insertion_order = true`);
await c.run(`COPY (SELECT * FROM read_parquet(${q(input)})) TO ${q(output)}
  (FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE ${Number(rows ?? 122880)})`);
