/**
 * The print listing's SQL alone (docs/benchmarks.md "Print listing"): seeds the
 * benchmark's 100,000 jobs into a fresh schema and runs each variant of the
 * page query `--runs` times on one connection, measuring that PostgreSQL
 * backend's CPU (/proc) and this process's CPU per query.
 *
 *   npx tsx bench/print-listing-sql.ts [--runs 500]
 *
 * A helper benchmark: no floor, no target (it compares variants). Prints a
 * line per variant and one JSON line, and writes the result file
 * (bench/results/, lib.ts writeResult).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openPostgres } from '../src/storage/driver/postgres.js';
import { migrate } from '../src/storage/migrate.js';
import { writeResult } from './lib.js';

const DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/test';
const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '500' } }, strict: true });
const runs = Number(args.runs);
const schema = `plsql_${process.pid}`;
const cpuOf = (pid: number) => {
  const rest = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = rest.slice(rest.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};
const iso = (c: string) => `to_char(${c} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const WHERE = `WHERE status = $1 AND printer = $2 ORDER BY created DESC, id DESC LIMIT 100 OFFSET 0`;
const VARIANTS: Record<string, string> = {
  'all columns, typed (first version)': `SELECT * FROM print_jobs ${WHERE}`,
  'presented columns, timestamps to_char': `SELECT id, status, printer, redirected_from, creator, owner, name, file_name, mime_type, size, copies, priority, pages, checkin, task, flow, stages, keep_tempfiles, retention_sec, message, attempts, ${iso('finished')}, ${iso('created')}, ${iso('updated')}, ${iso('next_attempt_at')} FROM print_jobs ${WHERE}`,
  'presented columns as text, timestamps raw': `SELECT id::text, status, printer, redirected_from, creator, owner, name, file_name, mime_type, size::text, copies::text, priority::text, pages::text, checkin::text, task::text, flow, stages::text, keep_tempfiles::text, retention_sec::text, message, attempts::text, finished, created, updated, next_attempt_at FROM print_jobs ${WHERE}`,
  'x: 10 to_json(text)': `SELECT to_json(status)::text, to_json(printer)::text, to_json(creator)::text, to_json(owner)::text, to_json(name)::text, to_json(file_name)::text, to_json(mime_type)::text, to_json(flow)::text, to_json(redirected_from)::text, to_json(message)::text FROM print_jobs ${WHERE}`,
  'x: 10 text columns': `SELECT status, printer, creator, owner, name, file_name, mime_type, flow, redirected_from, message FROM print_jobs ${WHERE}`,
  'x: 5 to_char': `SELECT ${iso('created')}, ${iso('updated')}, ${iso('finished')}, ${iso('next_attempt_at')}, ${iso('finished')} FROM print_jobs ${WHERE}`,
  'x: 5 timestamps raw': `SELECT created, updated, finished, next_attempt_at, finished FROM print_jobs ${WHERE}`,
  'x: 5 epoch ms': `SELECT (extract(epoch from created) * 1000)::bigint, (extract(epoch from updated) * 1000)::bigint, (extract(epoch from finished) * 1000)::bigint, (extract(epoch from next_attempt_at) * 1000)::bigint, (extract(epoch from finished) * 1000)::bigint FROM print_jobs ${WHERE}`,
  'x: one concat of 20 pieces': `SELECT '{"id":' || id || ',"a":' || size || ',"b":' || copies || ',"c":' || priority || ',"d":' || attempts || ',"e":' || keep_tempfiles || ',"f":' || id || ',"g":' || size || ',"h":' || copies || ',"i":' || priority FROM print_jobs ${WHERE}`,
  'x: row_to_json of presented columns': `SELECT row_to_json(j)::text FROM (SELECT id, status, printer, creator AS "user", owner, name, file_name AS "fileName", mime_type AS "mimeType", size, copies, priority, pages, flow, redirected_from AS "redirectedFrom", message, created, updated, finished, keep_tempfiles AS "keepTempfiles", attempts, next_attempt_at AS "nextAttempt" FROM print_jobs ${WHERE}) j`,
};

/** Microseconds per row of `SELECT <expr> FROM print_jobs` (best of three). */
async function perRow(client: pg.Client, expr: string): Promise<number> {
  let best = Infinity;
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    await client.query(`SELECT ${expr} FROM print_jobs`);
    best = Math.min(best, performance.now() - t0);
  }
  return (best * 1000) / 100_000;
}

const db = await openPostgres({ url: DATABASE_URL, schema, poolSize: 1 });
try {
  await migrate(db);
  await db.query(`INSERT INTO printers (name, connection) SELECT 'p' || i, 'file:///tmp/bench-p' || i FROM generate_series(0, 19) AS i`);
  await db.query(
    `INSERT INTO print_jobs (status, printer, creator, name, file_name, mime_type, size, blob_sha256, created, updated, finished)
     SELECT ($2::text[])[1 + (i / 20) % 4], 'p' || (i % 20), 'bench', 'job-' || i, 'job-' || i || '.pdf', 'application/pdf', 1024, repeat('0', 64),
            now() - i * interval '1 second', now() - i * interval '1 second', now() - i * interval '1 second'
     FROM generate_series(1, $1::int) AS i`, [100_000, ['processed', 'canceled', 'error', 'paused']]);
  await db.exec('ANALYZE print_jobs');
  const { LISTED_FIELD_NAMES, listJobs, listedFieldsSql } = await import('../src/areas/print/jobs/store/listing.js');
  let shippedText = '';
  const { parseODataQuery } = await import('../src/query/odata.js');
  const { JOB_FIELDS } = await import('../src/areas/print/jobs/job-fields.js');
  const q = parseODataQuery(`$filter=${encodeURIComponent("status eq 'processed' and printer eq 'p7'")}&$orderby=created desc&$top=100`, JOB_FIELDS);
  await listJobs({ ...db, queryArrays: async (text: string) => { shippedText = text; return [['[]']] as never[]; } }, q, undefined, { processed: 1, canceled: 1, error: 1, paused: 1 });
  // the same page built field by field at every request (what a listing without $select ran before migration 017's listing column)
  let builtText = '';
  await listJobs({ ...db, queryArrays: async (text: string) => { builtText = text; return [['[]']] as never[]; } }, { ...q, select: [...LISTED_FIELD_NAMES] }, undefined, { processed: 1, canceled: 1, error: 1, paused: 1 });
  const client = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path="${schema}" -c TimeZone=UTC` });
  await client.connect();
  const backend = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const variants: { label: string; postgresMs: number; nodeMs: number; wallMs: number }[] = [];
  const columns: { expression: string; usPerRow: number }[] = [];
  const time = async (label: string, pid: number, run: () => Promise<unknown>) => {
    for (let i = 0; i < 50; i++) await run();
    const c0 = cpuOf(pid);
    const n0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < runs; i++) await run();
    const wall = performance.now() - t0;
    const node = process.cpuUsage(n0);
    const v = { label, postgresMs: ((cpuOf(pid) - c0) * 1000) / runs, nodeMs: (node.user + node.system) / 1000 / runs, wallMs: wall / runs };
    variants.push(v);
    console.log(`${label.padEnd(48)} postgres ${v.postgresMs.toFixed(3)} ms  node ${v.nodeMs.toFixed(3)} ms  wall ${v.wallMs.toFixed(3)} ms`);
  };
  let i = 0;
  for (const [label, text] of Object.entries(VARIANTS)) {
    const name = `v${i++}`;
    await time(label, backend, () => client.query({ name, text, values: ['processed', 'p7'] }));
  }
  // the shipped listing, through the driver (its own pooled connection, which the pool closes when idle for 10 s)
  const pool = (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  await time('shipped listJobs (the listing column)', pool, () => listJobs(db, q, undefined, { processed: 86_400, canceled: 86_400, error: 259_200, paused: 259_200 }));
  // the same page with LIMIT $3 OFFSET $4 as parameters (not shipped: docs/design/print-jobs.md, "The page size as a literal"): a parameter LIMIT is costed at 10 % of the
  // matching rows, more than the custom plan's 100, so PostgreSQL planned the statement again at every execution
  const limitParams = shippedText.replace(/ LIMIT 100$/, ' LIMIT $3 OFFSET $4');
  if (limitParams === shippedText) throw new Error('the shipped statement no longer ends in LIMIT 100');
  await time('same page on this connection, LIMIT 100', backend, () => client.query({ name: 'limitLiteral', text: shippedText, values: ['processed', 'p7'] }));
  await time('same page built field by field (before 017)', backend, () => client.query({ name: 'built', text: builtText, values: ['processed', 'p7'] }));
  await time('same page, LIMIT $3 OFFSET $4 (custom plans)', backend, () => client.query({ name: 'limitParams', text: limitParams, values: ['processed', 'p7', 100, 0] }));
  // the page joined by PostgreSQL in one value (not shipped: docs/design/print-jobs.md, "The page is joined in the API process"): the 55 KB text and its copies are freed at the end of
  // every statement, and glibc gives the memory back to the kernel (a brk shrink) each time
  await time('same page joined in PostgreSQL (string_agg)', backend, () => client.query({ name: 'stringAgg', text: `SELECT '[' || coalesce(string_agg(j, ','), '') || ']' FROM (${shippedText}) page`, values: ['processed', 'p7'] }));
  // each field of the shipped statement over all 100,000 rows: PostgreSQL's cost per row
  const cols = listedFieldsSql({ processed: 1, canceled: 1, error: 1, paused: 1 });
  const base = await perRow(client, 'count(*)');
  for (const c of cols) {
    const usPerRow = (await perRow(client, `count(${c})`)) - base;
    columns.push({ expression: c, usPerRow });
    console.log(`  ${usPerRow.toFixed(3)} µs/row  ${c.slice(0, 110)}`);
  }
  // the plan the shipped statement runs with once PostgreSQL switches to its generic plan
  const shipped = shippedText;
  await client.query('SET plan_cache_mode = force_generic_plan');
  await client.query(`PREPARE shipped(text, text) AS ${shipped}`);
  const plan = await client.query(`EXPLAIN (ANALYZE, BUFFERS) EXECUTE shipped('processed', 'p7')`);
  const planText = plan.rows.map((r: Record<string, string>) => Object.values(r)[0]).join('\n');
  console.log(`generic plan of the shipped statement:\n${planText}`);
  await client.end();
  const figures = { bench: 'print-listing-sql', runs, variants, columns, plan: planText };
  console.log(JSON.stringify(figures));
  writeResult('print-listing-sql', args, { figures, floors: {}, ratios: {}, targets: [] });
} finally {
  await db.exec(`DROP SCHEMA "${schema}" CASCADE`).catch(() => {});
  await db.close();
}
