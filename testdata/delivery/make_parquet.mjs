// Writes agents.parquet with DuckDB (npm @duckdb/node-api), an
// implementation independent of parquet-go, with the same rows as
// make_files.py plus DECIMAL, DATE and UUID columns.
// Run (ESM ignores NODE_PATH, so from the npm project):
//   cd /tmp/duck && npm install @duckdb/node-api && cp $OLDPWD/make_parquet.mjs . && node make_parquet.mjs $OLDPWD/agents.parquet
import { DuckDBInstance } from '@duckdb/node-api';

const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
await c.run(`
COPY (
  SELECT * FROM (VALUES
    ('agt_0000001', 'Ana Lima', 'Austin', 'TX', 42::BIGINT, 12345678.5::DOUBLE, true,
     '{"name":"Lima \\"Best\\" Homes","city":"Austin","state":"TX"}', '["luxury","investors"]',
     9007199254740993::BIGINT, 'line one' || chr(10) || 'line two, with comma',
     0.02::DECIMAL(9,2), 123456789012345678901234.5678::DECIMAL(38,4), DATE '2024-02-29',
     '6ba7b810-9dad-11d1-80b4-00c04fd430c8'::UUID),
    ('agt_0000002', 'Bo Chen', 'Fresno', 'CA', 0::BIGINT, 0.25::DOUBLE, false,
     '{"name":"Chen Realty","city":"Fresno","state":"CA"}', '[]',
     1::BIGINT, 'café ☃', -1.50::DECIMAL(9,2), -0.0001::DECIMAL(38,4), DATE '1969-12-31', NULL),
    ('agt_0000003', 'Cy D''Souza', '', 'NY', 7::BIGINT, 1e-7::DOUBLE, false,
     '{"name":"","city":"","state":""}', '["relocation"]',
     -12::BIGINT, '', NULL, 0::DECIMAL(38,4), NULL, NULL)
  ) AS t(id, fullName, city, state, transactionCount, volume, isTeamLead, office, tags, bigId, note,
         price, wide, listedOn, uid)
) TO '${process.argv[2] ?? 'agents.parquet'}' (FORMAT parquet, ROW_GROUP_SIZE 2)`);
console.log('wrote agents.parquet');
