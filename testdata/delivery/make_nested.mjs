// Writes nested.parquet (native nested columns: STRUCT, LIST, MAP) and
// nested.ndjson (the same rows as DuckDB's own JSON) with DuckDB (npm
// @duckdb/node-api), a writer independent of the SDK and of parquet-go.
// Also zips.csv and zips.ndjson: zip codes with leading zeros and
// numbers, as a csv column and its ndjson twin.
// Run: testdata/delivery/make_nested.sh (installs DuckDB into a cache dir).
import { DuckDBInstance } from '@duckdb/node-api';

const dir = process.argv[2] ?? '.';
const db = await DuckDBInstance.create(':memory:', { threads: '1' });
const c = await db.connect();
await c.run(`
CREATE TABLE t AS SELECT * FROM (VALUES
  (1, {'name': 'Lima "Best" Homes', 'zip': '02134', 'geo': {'lat': 42.35, 'lon': -71.06}, 'agents': 12::INTEGER, 'opened': DATE '2019-04-01', 'fee': 2.50::DECIMAL(9,2)},
      ['luxury', 'investors'], [{'k': 'a', 'v': 1}, {'k': 'b', 'v': NULL}], [[1, 2], [], [3]], MAP {'x': 1, 'y': 2}, 'café ☃'),
  (2, {'name': 'Chen Realty', 'zip': '90210', 'geo': NULL, 'agents': NULL, 'opened': NULL, 'fee': NULL},
      [], [], [], MAP {}, ''),
  (3, NULL, NULL, NULL, NULL, NULL, NULL),
  (4, {'name': NULL, 'zip': '00501', 'geo': {'lat': NULL, 'lon': 0.5}, 'agents': 0::INTEGER, 'opened': DATE '1969-12-31', 'fee': -0.01::DECIMAL(9,2)},
      ['relocation', NULL, ''], [{'k': NULL, 'v': 7}], [NULL, [NULL, 4]], MAP {'z': NULL}, 'line one' || chr(10) || 'line two')
) AS v(id, office, tags, pairs, grid, counts, note)`);
await c.run(`COPY t TO '${dir}/nested.parquet' (FORMAT parquet, ROW_GROUP_SIZE 2)`);
await c.run(`COPY t TO '${dir}/nested.ndjson' (FORMAT json)`);
await c.run(`
CREATE TABLE z AS SELECT * FROM (VALUES
  ('a', '02134', 42, 1.5, true, '["x","y"]', '{"name":"Lima","zip":"02134"}'),
  ('b', '90210', 7, 0.25, false, '[]', '{"name":"Chen","zip":"90210"}'),
  ('c', '00501', 0, -3.0, true, '["z"]', '{"name":"","zip":"00501"}')
) AS v(id, zip, deals, score, active, tags, office)`);
await c.run(`COPY z TO '${dir}/zips.csv' (FORMAT csv, HEADER true)`);
await c.run(`COPY (SELECT id, zip, deals, score, active, tags::JSON AS tags, office::JSON AS office FROM z) TO '${dir}/zips.ndjson' (FORMAT json)`);
await c.run(`COPY z TO '${dir}/zips.parquet' (FORMAT parquet)`);
// LZ4_RAW pages that compress less than 3-fold (md5 text): parquet-go
// v0.32.0 reads them wrong by itself (internal/pqrows TestInflate_LZ4).
await c.run(`COPY (SELECT i * 7919 AS id, i * 1.5 AS volume, md5(i::VARCHAR) AS note FROM range(3000) r(i))
  TO '${dir}/lz4.parquet' (FORMAT parquet, COMPRESSION lz4_raw)`);
console.log(`wrote nested.parquet, nested.ndjson, zips.csv, zips.ndjson, zips.parquet and lz4.parquet into ${dir}`);
