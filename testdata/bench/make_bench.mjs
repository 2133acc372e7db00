// Writes the nested-row benchmark files with DuckDB (npm @duckdb/node-api),
// a writer independent of the SDK, parquet-go and the fake server.
//
//   testdata/bench/make_bench.sh [ROWS] [DIR]
//
// Files (ROWS rows each, default 1,000,000, into DIR):
//   nested.ndjson.gz, nested.json     office and tags as JSON objects/arrays
//   nested.csv                        office and tags as JSON-encoded cells
//   nested.parquet                    office and tags as JSON-encoded strings,
//                                     row groups of 122,880 rows (DuckDB's default)
//   nested-1rg.parquet                the same in one row group
//   nested-native.parquet             office a STRUCT, tags a LIST<VARCHAR>
// The row: 7 scalar columns (id, fullName, city, state, transactionCount,
// volume, isTeamLead), tags (0-3 strings) and office {name, phone, zip,
// agents}; every 1000th name has quotes and non-ASCII letters, zips keep
// their leading zeros.
import { DuckDBInstance } from '@duckdb/node-api';

const rows = Number(process.argv[2] ?? 1000000);
const dir = process.argv[3] ?? '.';
const db = await DuckDBInstance.create(':memory:', { threads: '1' });
const c = await db.connect();
await c.run(`SET preserve_insertion_order = true`);
await c.run(`
CREATE TABLE t AS SELECT
  'agt_' || lpad(i::VARCHAR, 8, '0') AS id,
  CASE WHEN i % 1000 = 7 THEN 'José "JJ" Ñúñez ' || i
       ELSE (['Ana','Bo','Cy','Dee','Eli','Fay','Gus','Hana','Ivo','Jun'])[1 + i % 10] || ' ' ||
            (['Lima','Chen','Smith','Okafor','Nguyen','Garcia','Kowalski','Haddad'])[1 + (i * 7) % 8] END AS fullName,
  (['Austin','Fresno','Boston','Miami','Denver','Seattle','Tulsa','Reno'])[1 + (i * 3) % 8] AS city,
  (['TX','CA','MA','FL','CO','WA','OK','NV'])[1 + (i * 3) % 8] AS state,
  ((i * 37) % 500)::BIGINT AS transactionCount,
  ((i * 7919) % 10000000) / 100.0 AS volume,
  i % 7 = 0 AS isTeamLead,
  (['luxury','investors','relocation'])[1:(i % 4)]::VARCHAR[] AS tags,
  {'name': 'Office ' || (i % 5000), 'phone': '555-' || lpad((i % 10000)::VARCHAR, 4, '0'),
   'zip': lpad(((i * 13) % 99999)::VARCHAR, 5, '0'), 'agents': (i % 40)::INTEGER} AS office
FROM range(${rows}) r(i)`);
const flat = `SELECT id, fullName, city, state, transactionCount, volume, isTeamLead,
  to_json(tags)::VARCHAR AS tags, to_json(office)::VARCHAR AS office FROM t`;
await c.run(`COPY t TO '${dir}/nested.ndjson.gz' (FORMAT json, COMPRESSION gzip)`);
await c.run(`COPY t TO '${dir}/nested.json' (FORMAT json, ARRAY true)`);
await c.run(`COPY (${flat}) TO '${dir}/nested.csv' (FORMAT csv, HEADER true)`);
await c.run(`COPY (${flat}) TO '${dir}/nested.parquet' (FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE 122880)`);
await c.run(`COPY (${flat}) TO '${dir}/nested-1rg.parquet' (FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE ${rows + 1})`);
await c.run(`COPY t TO '${dir}/nested-native.parquet' (FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE 122880)`);
for (const f of ['nested.parquet', 'nested-1rg.parquet', 'nested-native.parquet']) {
  const r = await c.runAndReadAll(`SELECT count(DISTINCT row_group_id), max(row_group_num_rows) FROM parquet_metadata('${dir}/${f}')`);
  console.log(f, 'row groups, max rows a group:', r.getRows()[0].map(String).join(', '));
}
console.log(`wrote ${rows} rows into ${dir}`);
