/**
 * What each part of `list_items` costs a large import, in PostgreSQL alone
 * (docs/benchmarks.md, "CSV import: what PostgreSQL's time per row is
 * for"): 1,000,000 rows shaped like bench:csv's (a repository href with a
 * random document uuid, two metadata keys, ids ascending) are written once
 * as 100 binary COPY files of 10,000 rows (server-side `COPY … TO`, so the
 * database must run on this machine as a superuser-reachable local server),
 * then loaded in one transaction into a fresh table per variant, the same
 * columns as `list_items` with a chosen set of indexes and triggers. Prints
 * the backend's CPU (from /proc/<pid>/stat) per variant; run the variants
 * alternately, more than once, when the machine is busy.
 *
 *   npx tsx bench/list-items-costs.ts [--rows 1000000] [variant ...]
 *
 * A helper benchmark: no floor, no target (it compares variants). Prints a
 * line per variant and one JSON line, and writes the result file
 * (bench/results/, lib.ts writeResult).
 *
 * Variants: `as-is` (primary key, `(lid, position)`, the hash index on
 * `doc_uuid`, the lid statement trigger as migration 010 wrote it),
 * `trigger-019` (the check rewritten to take the first row's lid and look
 * for another in one pass; tried as a migration 019, not shipped), `no-doc-index`,
 * `btree-doc-index`, `gin-doc-index` (`gin ((ARRAY[doc_uuid]))`, fastupdate,
 * pending list merged at the end), `trigger-hashed` (the check's distinct lids by
 * hashing), `no-trigger`, `trigger-no-body` (the
 * transition table kept, the function empty), `metadata-json` (a `json`
 * column instead of `jsonb`), `pkey-lid` (no document index, no trigger),
 * `pkey-only`.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { procCpuSeconds, writeResult } from './lib.js';

const DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/test';
const { values: args, positionals } = parseArgs({ options: { rows: { type: 'string', default: '1000000' } }, allowPositionals: true, strict: true });
const rows = Number(args.rows);
const CHUNK = 10_000;
const chunks = Math.ceil(rows / CHUNK);

const LID_CHECK = `DECLARE lids uuid[]; found integer;
BEGIN
  SELECT array_agg(DISTINCT lid) INTO lids FROM new_items;
  IF lids IS NULL THEN RETURN NULL; END IF;
  PERFORM 1 FROM lists WHERE lid = ANY(lids) FOR KEY SHARE;
  GET DIAGNOSTICS found = ROW_COUNT;
  IF found < cardinality(lids) THEN RAISE foreign_key_violation; END IF;
  RETURN NULL;
END`;
// migration 010's check, the distinct lids found by hashing instead of sorting the statement's rows
const LID_CHECK_HASHED = LID_CHECK.replace('SELECT array_agg(DISTINCT lid) INTO lids FROM new_items;', 'SELECT array_agg(lid) INTO lids FROM (SELECT DISTINCT lid FROM new_items) d;');
// tried, not shipped: the first row's lid, one pass for another (no CPU saved in the whole load)
const LID_CHECK_019 = `DECLARE first_lid uuid; lids uuid[]; locked integer;
BEGIN
  SELECT lid INTO first_lid FROM new_items LIMIT 1;
  IF NOT FOUND THEN RETURN NULL; END IF;
  IF EXISTS (SELECT 1 FROM new_items WHERE lid <> first_lid) THEN
    SELECT array_agg(DISTINCT lid) INTO lids FROM new_items;
  ELSE
    lids := ARRAY[first_lid];
  END IF;
  PERFORM 1 FROM lists WHERE lid = ANY(lids) FOR KEY SHARE;
  GET DIAGNOSTICS locked = ROW_COUNT;
  IF locked < cardinality(lids) THEN RAISE foreign_key_violation; END IF;
  RETURN NULL;
END`;
const trigger = (t: string, body: string) => `
CREATE FUNCTION ${t}_check() RETURNS trigger LANGUAGE plpgsql AS $$ ${body} $$;
CREATE TRIGGER ${t}_insert AFTER INSERT ON ${t} REFERENCING NEW TABLE AS new_items FOR EACH STATEMENT EXECUTE FUNCTION ${t}_check();`;
const LID = (t: string) => `CREATE INDEX ON ${t} (lid, position);`;
const HASH = (t: string) => `CREATE INDEX ON ${t} USING hash (doc_uuid) WHERE doc_uuid IS NOT NULL;`;

interface Variant { json?: boolean; gin?: boolean; ddl: (t: string) => string }
const VARIANTS: Record<string, Variant> = {
  'as-is': { ddl: (t) => LID(t) + HASH(t) + trigger(t, LID_CHECK) },
  'no-doc-index': { ddl: (t) => LID(t) + trigger(t, LID_CHECK) },
  'btree-doc-index': { ddl: (t) => `${LID(t)} CREATE INDEX ON ${t} (doc_uuid) WHERE doc_uuid IS NOT NULL;` + trigger(t, LID_CHECK) },
  'gin-doc-index': { gin: true, ddl: (t) => `${LID(t)} CREATE INDEX ${t}_gin ON ${t} USING gin ((ARRAY[doc_uuid])) WHERE doc_uuid IS NOT NULL;` + trigger(t, LID_CHECK) },
  'trigger-019': { ddl: (t) => LID(t) + HASH(t) + trigger(t, LID_CHECK_019) },
  'trigger-hashed': { ddl: (t) => LID(t) + HASH(t) + trigger(t, LID_CHECK_HASHED) },
  'no-trigger': { ddl: (t) => LID(t) + HASH(t) },
  'trigger-no-body': { ddl: (t) => LID(t) + HASH(t) + trigger(t, 'BEGIN RETURN NULL; END') },
  'metadata-json': { json: true, ddl: (t) => LID(t) + HASH(t) + trigger(t, LID_CHECK) },
  'pkey-lid': { ddl: (t) => LID(t) },
  'pkey-only': { ddl: () => '' },
};
const chosen = positionals.length > 0 ? positionals : ['as-is', 'no-doc-index', 'no-trigger', 'as-is', 'no-doc-index', 'no-trigger'];
for (const v of chosen) if (!VARIANTS[v]) throw new Error(`unknown variant ${v}; one of ${Object.keys(VARIANTS).join(', ')}`);

const cpuSeconds = (pid: number): number => procCpuSeconds(pid) ?? NaN;

const schema = `bench_costs_${process.pid}`;
const dir = mkdtempSync(path.join(os.tmpdir(), 'wcr-bench-costs-'));
chmodSync(dir, 0o777); // the database server writes the files
const db = new pg.Client({ connectionString: DATABASE_URL });
await db.connect();
try {
  await db.query(`CREATE SCHEMA ${schema}`);
  await db.query(`SET search_path = ${schema}`);
  const lid = '3f2b8c1e-5a4d-4e6f-9a7b-1c2d3e4f5a6b';
  await db.query(`CREATE TABLE lists (lid uuid PRIMARY KEY)`);
  await db.query(`INSERT INTO lists VALUES ($1)`, [lid]);
  await db.query(`CREATE TABLE stage AS
    SELECT ('01900000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid AS id, $1::uuid AS lid, i - 1 AS position,
           '/v1/services/store/repo/' || u::text AS href, 'store'::text AS doc_sid, u AS doc_uuid,
           jsonb_build_object('name', 'Document ' || i || ', page 1', 'copies', (i % 5)::text) AS metadata
    FROM (SELECT i, gen_random_uuid() AS u FROM generate_series(1, $2::int) i) s`, [lid, rows]);
  for (let k = 0; k < chunks; k++) {
    for (const json of [false, true]) {
      await db.query(`COPY (SELECT id, lid, position, href, doc_sid, doc_uuid, metadata${json ? '::json' : ''} FROM stage
        WHERE position >= ${k * CHUNK} AND position < ${(k + 1) * CHUNK} ORDER BY position) TO '${path.join(dir, `${json ? 'j' : 'b'}${k}.bin`)}' (FORMAT binary)`);
    }
  }
  const pid = (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  console.log(`${rows} rows in ${chunks} COPYs of ${CHUNK}; backend CPU per variant (s), per 1,000 rows (ms)`);
  const measured: { variant: string; cpuSeconds: number; cpuMsPer1kRows: number; wallSeconds: number; heapMiB: number; indexesMiB: number; loadavg1: number }[] = [];
  for (const name of chosen) {
    const v = VARIANTS[name]!;
    await db.query('DROP TABLE IF EXISTS items CASCADE');
    await db.query(`DROP FUNCTION IF EXISTS items_check()`);
    await db.query(`CREATE TABLE items (id uuid PRIMARY KEY, lid uuid NOT NULL, position integer NOT NULL, href text NOT NULL, doc_sid text, doc_uuid uuid,
      metadata ${v.json ? 'json' : 'jsonb'} NOT NULL DEFAULT '{}', created timestamptz NOT NULL DEFAULT now(), modified timestamptz NOT NULL DEFAULT now())`);
    await db.query(v.ddl('items'));
    await db.query('CHECKPOINT');
    const c0 = cpuSeconds(pid);
    const t0 = performance.now();
    await db.query('BEGIN');
    for (let k = 0; k < chunks; k++) {
      await db.query(`COPY items (id, lid, position, href, doc_sid, doc_uuid, metadata) FROM '${path.join(dir, `${v.json ? 'j' : 'b'}${k}.bin`)}' (FORMAT binary)`);
    }
    await db.query('COMMIT');
    if (v.gin) await db.query(`SELECT gin_clean_pending_list('items_gin'::regclass)`);
    const cpu = cpuSeconds(pid) - c0;
    const wall = (performance.now() - t0) / 1000;
    const { rows: [size] } = await db.query<{ heap: number; idx: number }>(`SELECT pg_table_size('items')::float8 / 1048576 AS heap, pg_indexes_size('items')::float8 / 1048576 AS idx`);
    console.log(`${name.padEnd(16)} CPU ${cpu.toFixed(2)} s (${((cpu * 1e6) / rows).toFixed(2)} ms / 1,000 rows), wall ${wall.toFixed(2)} s, heap ${size!.heap.toFixed(1)} MiB, indexes ${size!.idx.toFixed(1)} MiB, load ${os.loadavg()[0]!.toFixed(2)}`);
    measured.push({ variant: name, cpuSeconds: cpu, cpuMsPer1kRows: (cpu * 1e6) / rows, wallSeconds: wall, heapMiB: size!.heap, indexesMiB: size!.idx, loadavg1: os.loadavg()[0]! });
  }
  const figures = { bench: 'list-items-costs', rows, variants: measured };
  console.log(JSON.stringify(figures));
  writeResult('list-items-costs', { ...args, variants: chosen }, { figures, floors: {}, ratios: {}, targets: [] });
} finally {
  await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
  await db.end();
  rmSync(dir, { recursive: true, force: true });
}
