/**
 * Print listing benchmark (docs/benchmarks.md).
 *
 *   npm run bench:print-listing -- [--duration 15] [--warmup 3] [--connections 20] [--jobs 100000] [--log-level info] [--server compiled|tsx] [--profile]
 *
 * Starts the project (bench/server.ts) as a child process, creates 20 printers
 * (p0..p19) and `--jobs` print jobs by one INSERT ... SELECT FROM
 * generate_series (settled states and printers spread evenly, one job a
 * second back in time), and runs autocannon against
 *
 *   GET /v3/jobs/?$filter=status eq 'processed' and printer eq 'p7'&$orderby=created desc&$top=100
 *
 * (OData parsed and translated per request; the print listing has no cache).
 * The floor is bench/bare-server.ts's `/v3/jobs/` (Koa + @koa/router, a
 * precomputed array of 100 job-shaped objects), measured before and after.
 * Prints a table (req/s, latency, the server's CPU per request and, for the
 * project, its PostgreSQL backends' CPU per request), the generic plan of the
 * statement the server runs (from listJobs), the ratio (target >= 0.3) and
 * one JSON line, and writes the result file (bench/results/, lib.ts
 * writeResult). `--profile` runs the project under `--cpu-prof` and prints
 * where its CPU went.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';
import { printSummary, summarizeProfile } from './profile.js';
import { listJobs } from '../src/areas/print/jobs/store/listing.js';
import { JOB_FIELDS } from '../src/areas/print/jobs/job-fields.js';
import { parseODataQuery } from '../src/query/odata.js';
import { backendPids, compileServers, cpuOf, expectStatus, fmt, parseModes, printTable, procCpuSeconds, requestJson, spawnServer, writeResult, type ChildServer } from './lib.js';

const DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/test';
// Settled states only: the server runs workers too, and waiting jobs for printers
// that do not exist would keep the dispatch engine busy during the measurement.
const STATES = ['processed', 'canceled', 'error', 'paused'];
const FILTER = "status eq 'processed' and printer eq 'p7'";
const QUERY = `$filter=${encodeURIComponent(FILTER)}&$orderby=${encodeURIComponent('created desc')}&$top=100`;

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '15' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '20' },
    jobs: { type: 'string', default: '100000' },
    'log-level': { type: 'string', default: 'info' },
    server: { type: 'string', default: 'compiled' },
    profile: { type: 'boolean', default: false },
  },
  strict: true,
});
const duration = Number(args.duration);
const warmup = Number(args.warmup);
const connections = Number(args.connections);
const jobs = Number(args.jobs);
const [mode] = parseModes(args.server);
if (!(duration >= 1 && duration <= 600)) throw new Error('--duration: 1 to 600 s');
if (!(warmup >= 0 && warmup <= 60)) throw new Error('--warmup: 0 to 60 s');
if (!Number.isInteger(connections) || connections < 1 || connections > 1000) throw new Error('--connections: 1 to 1000');
if (!Number.isInteger(jobs) || jobs < 1000 || jobs > 10_000_000) throw new Error('--jobs: 1000 to 10000000');

interface Run { label: string; reqPerSec: number; p50: number; p99: number; non2xx: number; errors: number; serverCpuMsPerReq: number; pgCpuMsPerReq?: number }


async function measure(label: string, server: ChildServer, url: string, headers: Record<string, string>, appName?: string): Promise<Run> {
  if (warmup > 0) await autocannon({ url, connections, duration: warmup, headers, timeout: 30 });
  const pids = appName ? await backendPids(DATABASE_URL, appName) : [];
  const cpu0 = procCpuSeconds(server.info.pid) ?? 0;
  const pg0 = cpuOf(pids);
  const r = await autocannon({ url, connections, duration, headers, timeout: 30 });
  const cpu = (procCpuSeconds(server.info.pid) ?? 0) - cpu0;
  const pgCpu = cpuOf(pids) - pg0;
  const served = Math.max(1, r['2xx']);
  const run: Run = { label, reqPerSec: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors + r.timeouts, serverCpuMsPerReq: (cpu * 1000) / served,
    ...(appName ? { pgCpuMsPerReq: (pgCpu * 1000) / served } : {}) };
  console.error(`${label}: ${fmt(run.reqPerSec)} req/s, p50 ${run.p50} ms, p99 ${run.p99} ms, non2xx ${run.non2xx}, errors ${run.errors}, ${fmt(run.serverCpuMsPerReq, 3)} server ms/req${appName ? `, ${fmt(run.pgCpuMsPerReq!, 3)} postgres ms/req (${pids.length} backends)` : ''}`);
  return run;
}

async function bareRun(label: string, dir: string | undefined): Promise<Run> {
  const bare = await spawnServer('bench/bare-server.ts', [], [], { compiledDir: dir });
  try {
    return await measure(label, bare, `${bare.info.url}/v3/jobs/?${QUERY}`, {});
  } finally {
    await bare.stop();
  }
}

const compiled = mode === 'compiled' ? await compileServers() : undefined;
const profDir = args.profile ? await mkdtemp(path.join(os.tmpdir(), 'wcr-bench-prof-')) : undefined;
const runs: Run[] = [];
let seedMs = 0;
let bodyBytes = 0;
let plan = '';
try {
  runs.push(await bareRun('bare koa (before)', compiled?.dir));
  const server = await spawnServer('bench/server.ts', ['--log-level', args['log-level']], profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [], { compiledDir: compiled?.dir });
  try {
    const { url, token, schema } = server.info as { url: string; token: string; schema: string };
    const client = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path="${schema}"` });
    await client.connect();
    try {
      const t0 = Date.now();
      await client.query(`INSERT INTO printers (name, connection) SELECT 'p' || i, 'file:///tmp/bench-p' || i FROM generate_series(0, 19) AS i`);
      await client.query(
        `INSERT INTO print_jobs (status, printer, creator, name, file_name, mime_type, size, blob_sha256, created, updated, finished)
         SELECT ($2::text[])[1 + (i / 20) % cardinality($2::text[])], 'p' || (i % 20), 'bench', 'job-' || i, 'job-' || i || '.pdf',
                'application/pdf', 1024, repeat('0', 64), now() - i * interval '1 second', now() - i * interval '1 second',
                CASE WHEN ($2::text[])[1 + (i / 20) % cardinality($2::text[])] IN ('processed', 'canceled', 'error') THEN now() - i * interval '1 second' END
         FROM generate_series(1, $1::int) AS i`,
        [jobs, STATES]);
      await client.query('ANALYZE print_jobs');
      seedMs = Date.now() - t0;
      // the plan of the statement the server runs (its text from listJobs), as the generic plan
      // PostgreSQL switches the prepared statement to after five executions
      let statement = '';
      const capture = { queryArrays: async (text: string) => { statement = text; return [['[]']] as never[]; }, query: async () => ({ rows: [], rowCount: 0 }), exec: async () => {} };
      await listJobs(capture, parseODataQuery(QUERY, JOB_FIELDS), undefined, { processed: 86_400, canceled: 86_400, error: 259_200, paused: 259_200 });
      await client.query('SET plan_cache_mode = force_generic_plan');
      await client.query(`PREPARE listing(text, text) AS ${statement}`);
      const explain = await client.query(`EXPLAIN EXECUTE listing('processed', 'p7')`);
      plan = explain.rows.map((r: Record<string, string>) => Object.values(r)[0]).join('\n');
    } finally {
      await client.end();
    }
    const target = `${url}/v3/jobs/?${QUERY}`;
    const probe = await requestJson('GET', target, token);
    expectStatus(probe, 200, 'GET /v3/jobs/ (filtered)');
    const list = probe.body as { status: string; printer: string }[];
    if (!Array.isArray(list) || list.length !== 100 || list.some((j) => j.status !== 'processed' || j.printer !== 'p7')) throw new Error('the filtered listing did not answer 100 processed jobs of p7');
    bodyBytes = probe.raw.length;
    console.error(`seeded ${jobs} jobs in ${seedMs} ms; body ${bodyBytes} bytes\nplan:\n${plan}`);
    runs.push(await measure(`project log=${args['log-level']}`, server, target, { authorization: `Bearer ${token}` }, schema));
  } finally {
    await server.stop();
  }
  runs.push(await bareRun('bare koa (after)', compiled?.dir));
  if (profDir) {
    const files = (await readdir(profDir)).filter((f) => f.endsWith('.cpuprofile'));
    const summaries = files.map((f) => summarizeProfile(path.join(profDir, f), 25)).sort((a, b) => b.totalMs * (1 - b.idleShare) - a.totalMs * (1 - a.idleShare));
    if (summaries[0]) printSummary(summaries[0]);
  }
} finally {
  compiled?.cleanup();
  if (profDir) await rm(profDir, { recursive: true, force: true });
}

const bares = runs.filter((r) => r.label.startsWith('bare'));
const floor = bares.reduce((a, r) => a + r.reqPerSec, 0) / bares.length;
const project = runs.find((r) => r.label.startsWith('project'))!;
console.log(`\nGET /v3/jobs/?$filter=${FILTER}&$orderby=created desc&$top=100 over ${jobs} jobs, ${connections} connections, ${duration} s each (+${warmup} s warm-up), server: ${mode}, ${os.cpus().length} cores, node ${process.version}`);
printTable(['run', 'req/s', 'x bare', 'p50 ms', 'p99 ms', 'non2xx+err', 'server ms/req', 'postgres ms/req'],
  runs.map((r) => [r.label, fmt(r.reqPerSec), fmt(r.reqPerSec / floor, 2), r.p50, r.p99, r.non2xx + r.errors, fmt(r.serverCpuMsPerReq, 3), r.pgCpuMsPerReq === undefined ? '' : fmt(r.pgCpuMsPerReq, 3)]));
console.log(`ratio project / bare: ${fmt(project.reqPerSec / floor, 2)} (target >= 0.30)`);
const figures = { bench: 'print-listing', jobs, connections, duration, warmup, server: mode, cores: os.cpus().length, loadavg: os.loadavg(), seedMs, bodyBytes, bareReqPerSec: floor, runs, ratio: project.reqPerSec / floor, targetMet: project.reqPerSec / floor >= 0.3, plan };
console.log(JSON.stringify(figures));
writeResult('print-listing', args, {
  figures,
  floors: { 'bare koa req/s (mean of before/after)': floor },
  ratios: { 'project / bare koa': figures.ratio },
  targets: [{ name: 'project / bare koa (req/s)', value: figures.ratio, target: '>= 0.30', met: figures.targetMet }],
});
