/**
 * Listing benchmark (docs/benchmarks.md).
 *
 *   npm run bench:children -- [--duration 15] [--connections 20] [--entries 100000]
 *     [--deep-offset 50000] [--log-levels info,warn] [--server tsx|compiled] [--profile | --profile-only]
 *
 * For each log level: starts the server (bench/server.ts) as a child process,
 * creates one collection through the API, fills it with `--entries` documents
 * by one INSERT ... SELECT FROM generate_series, and runs autocannon (in this
 * process, `--connections` keep-alive connections, `--duration` s after a 3 s
 * warm-up) against GET .../children?limit=100 at offset 0 and at the deep
 * offset. The floor is bench/bare-server.ts (Koa + @koa/router, a precomputed
 * 100-entry array), measured before and after the project runs. With
 * `--profile`, one more project run is made under `--cpu-prof` per offset and
 * the profiles are summarised (bench/profile.ts); `--profile-only` makes just
 * those runs.
 *
 * Prints a table and one JSON line with every figure, and writes the result
 * file (bench/results/, lib.ts writeResult). Target: >= 0.30 x the floor's
 * req/s, judged on the shipped configuration (listing cache on); the
 * uncached runs are printed and recorded as context.
 */
import { rmSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon, { type Result } from 'autocannon';
import pg from 'pg';
import {
  backendPids, cpuOf,
  busyCores, compileServers, expectStatus, fmt, machineCpu, parseModes, printTable, procCpuSeconds, requestJson, spawnServer, writeResult, type ChildServer,
} from './lib.js';
import { printSummary, summarizeProfile, type ProfileSummary } from './profile.js';

const DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/test';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '15' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '20' },
    entries: { type: 'string', default: '100000' },
    'deep-offset': { type: 'string', default: '50000' },
    'log-levels': { type: 'string', default: 'info,warn' },
    /** Children listings cache of the API process (server.listingCacheBytes): measured on and off. */
    'listing-cache': { type: 'string', default: 'on,off' },
    server: { type: 'string', default: 'compiled' },
    profile: { type: 'boolean', default: false },
    'profile-only': { type: 'boolean', default: false },
  },
  strict: true,
});
const duration = Number(args.duration);
const warmup = Number(args.warmup);
const connections = Number(args.connections);
const entries = Number(args.entries);
const deepOffset = Number(args['deep-offset']);
const cacheModes = args['listing-cache'].split(',').map((m) => m.trim()).filter((m) => m === 'on' || m === 'off');
if (cacheModes.length === 0) throw new Error('--listing-cache: on, off or on,off');
const logLevels = args['log-levels'].split(',').map((l) => l.trim()).filter(Boolean);
const [mode] = parseModes(args.server);
if (!(duration >= 1 && duration <= 600)) throw new Error('--duration: 1 to 600 s');
if (!(warmup >= 0 && warmup <= 60)) throw new Error('--warmup: 0 to 60 s');
if (!Number.isInteger(connections) || connections < 1 || connections > 1000) throw new Error('--connections: 1 to 1000');
if (!Number.isInteger(entries) || entries < 100 || entries > 10_000_000) throw new Error('--entries: 100 to 10000000');
if (!Number.isInteger(deepOffset) || deepOffset < 0 || deepOffset + 100 > entries) throw new Error('--deep-offset: within the entries');
for (const l of logLevels) if (!['info', 'warn', 'error', 'silent', 'debug'].includes(l)) throw new Error(`--log-levels: "${l}"?`);
if (logLevels.length === 0 || logLevels.length > 4) throw new Error('--log-levels: one to four levels');
const offsets = [0, deepOffset];



interface Measured {
  label: string;
  target: 'project' | 'bare';
  logLevel?: string;
  offset?: number;
  reqPerSec: number;
  p50: number;
  p99: number;
  avgLatency: number;
  requests: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  bytesPerSec: number;
  /** CPU the server used, in cores (1.0 = one core busy all the time). */
  serverCores: number;
  /** CPU the server's PostgreSQL backends used, in cores (project only). */
  pgCores?: number;
  /** Server CPU per request (ms); plus PostgreSQL's for the project. */
  serverCpuMsPerReq: number;
  pgCpuMsPerReq?: number;
  /** CPU this process (autocannon) used, in cores. */
  loadgenCores: number;
  /** Machine-wide CPU busy, in cores (of os.cpus().length), everything included. */
  machineCores: number;
  serverLogBytes: number;
}

async function cannon(url: string, headers: Record<string, string>, seconds: number): Promise<Result> {
  return autocannon({ url, connections, duration: seconds, headers, timeout: 30 });
}

async function measure(label: string, target: 'project' | 'bare', server: ChildServer, url: string, headers: Record<string, string>,
  extra: Partial<Measured> = {}): Promise<Measured & { fromUs: number; toUs: number }> {
  if (warmup > 0) await cannon(url, headers, warmup);
  const pid = server.info.pid;
  // after the warm-up the pool has all the connections it will use
  const pgPids = target === 'project' ? await backendPids(DATABASE_URL, String(server.info.schema)) : [];
  const pg0 = cpuOf(pgPids);
  const cpu0 = procCpuSeconds(pid) ?? 0;
  const own0 = process.cpuUsage();
  const m0 = machineCpu();
  const logs0 = server.logBytes();
  const t0 = process.hrtime.bigint();
  const r = await cannon(url, headers, duration);
  const t1 = process.hrtime.bigint();
  const wall = Number(t1 - t0) / 1e9;
  const m1 = machineCpu();
  const pgSeconds = cpuOf(pgPids) - pg0;
  const own = process.cpuUsage(own0);
  const cpu1 = procCpuSeconds(pid) ?? 0;
  const cores = os.cpus().length;
  const served = Math.max(1, r['2xx']);
  const out: Measured & { fromUs: number; toUs: number } = {
    label, target, ...extra,
    fromUs: Number(t0 / 1000n),
    toUs: Number(t1 / 1000n),
    reqPerSec: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    avgLatency: r.latency.average,
    requests: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    bytesPerSec: r.throughput.average,
    serverCores: (cpu1 - cpu0) / wall,
    serverCpuMsPerReq: ((cpu1 - cpu0) * 1000) / served,
    ...(target === 'project' ? { pgCores: pgSeconds / wall, pgCpuMsPerReq: (pgSeconds * 1000) / served } : {}),
    loadgenCores: (own.user + own.system) / 1e6 / wall,
    machineCores: busyCores(m0, m1),
    serverLogBytes: server.logBytes() - logs0,
  };
  console.error(`${label}: ${fmt(out.reqPerSec)} req/s, p50 ${out.p50} ms, p99 ${out.p99} ms, non2xx ${out.non2xx}, errors ${out.errors}, server ${fmt(out.serverCores, 2)} cores (${fmt(out.serverCpuMsPerReq, 2)} ms/req)${out.pgCores !== undefined ? `, postgres ${fmt(out.pgCores, 2)} cores (${fmt(out.pgCpuMsPerReq!, 2)} ms/req)` : ''}, loadgen ${fmt(out.loadgenCores, 2)} cores, machine ${fmt(out.machineCores, 2)}/${cores} cores`);
  if (out.non2xx > 0 || out.errors > 0 || out.timeouts > 0) console.error(`  WARNING: ${label} had ${out.non2xx} non-2xx responses, ${out.errors} errors, ${out.timeouts} timeouts`);
  return out;
}

/** Starts a project server, makes the collection through the API and the entries through SQL. */
async function projectServer(logLevel: string, nodeArgs: string[], compiledDir: string | undefined, cache = 'on') {
  const server = await spawnServer('bench/server.ts', ['--log-level', logLevel, ...(cache === 'off' ? ['--no-listing-cache'] : [])], nodeArgs, { compiledDir });
  try {
    const { url, token, schema } = server.info as { url: string; token: string; schema: string };
    const made = await requestJson('POST', `${url}/v1/services/store/repo`, token, { name: 'children-bench', type: 'collection' });
    expectStatus(made, 200, 'POST /v1/services/store/repo (collection)');
    const collection = (made.body as { uuid: string }).uuid;
    const client = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path="${schema}"` });
    await client.connect();
    const t0 = Date.now();
    try {
      await client.query(
        `INSERT INTO entries (uuid, sid, parent, name, type, creator)
         SELECT gen_random_uuid(), 'store', $1::uuid, 'doc-' || lpad(i::text, 6, '0'), 'document', 'bench'
         FROM generate_series(1, $2::int) AS i`,
        [collection, entries],
      );
      await client.query('ANALYZE entries');
    } finally {
      await client.end();
    }
    const seedMs = Date.now() - t0;
    const headers = { authorization: `Bearer ${token}` };
    const pathOf = (offset: number) => `${url}/v1/services/store/repo/${collection}/children?limit=100&offset=${offset}`;
    const bodyBytes: Record<number, number> = {};
    for (const offset of offsets) {
      const res = await requestJson('GET', pathOf(offset), token);
      expectStatus(res, 200, `GET children offset ${offset}`);
      const list = res.body as { name: string }[];
      const first = `doc-${String(offset + 1).padStart(6, '0')}`;
      if (!Array.isArray(list) || list.length !== 100 || list[0]?.name !== first) {
        throw new Error(`GET children offset ${offset}: expected 100 entries from ${first}, got ${Array.isArray(list) ? `${list.length} from ${list[0]?.name}` : typeof list}`);
      }
      bodyBytes[offset] = res.raw.length;
    }
    return { server, headers, pathOf, seedMs, bodyBytes, collection };
  } catch (err) {
    await server.stop();
    throw err;
  }
}

const results: (Measured & { fromUs: number; toUs: number })[] = [];
const profiles: { offset: number; logLevel: string; summary: ProfileSummary }[] = [];
let bareBodyBytes = 0;
const projectBodyBytes: Record<string, Record<number, number>> = {};
const seedMs: Record<string, number> = {};
const compiled = mode === 'compiled' ? await compileServers() : undefined;
const profDir = args.profile || args['profile-only'] ? await mkdtemp(path.join(os.tmpdir(), 'wcr-bench-prof-')) : undefined;
// Ctrl-C: the servers get the signal too and clean up after themselves; remove our files
let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  // `on`, not `once`: tsx relays the terminal's SIGINT, so it can arrive twice
  process.on(sig, () => {
    if (interrupted) return;
    interrupted = true;
    compiled?.cleanup();
    if (profDir) rmSync(profDir, { recursive: true, force: true });
    process.exit(130);
  });
}
try {
  const bareRun = async (label: string) => {
    const bare = await spawnServer('bench/bare-server.ts', [], [], { compiledDir: compiled?.dir });
    try {
      bareBodyBytes = Number(bare.info.bodyBytes);
      results.push(await measure(label, 'bare', bare, `${bare.info.url}/v1/services/store/repo/${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}/children?limit=100&offset=0`, {}));
    } finally {
      await bare.stop();
    }
  };
  if (!args['profile-only']) await bareRun('bare koa (before)');

  for (const level of args['profile-only'] ? [] : logLevels) {
    for (const cache of cacheModes) {
      const p = await projectServer(level, [], compiled?.dir, cache);
      try {
        seedMs[level] = p.seedMs;
        projectBodyBytes[level] = p.bodyBytes;
        console.error(`[log ${level}, cache ${cache}] seeded ${entries} entries in ${p.seedMs} ms; body ${p.bodyBytes[0]} bytes (bare: ${bareBodyBytes})`);
        for (const offset of offsets) {
          results.push(await measure(`project log=${level} cache=${cache} offset=${offset}`, 'project', p.server, p.pathOf(offset), p.headers, { logLevel: level, offset }));
        }
      } finally {
        await p.server.stop();
      }
    }
  }

  if (!args['profile-only']) await bareRun('bare koa (after)');

  if (profDir) {
    const level = logLevels.includes('warn') ? 'warn' : logLevels[0]!;
    for (const offset of offsets) {
      const dir = path.join(profDir, `offset-${offset}`);
      const p = await projectServer(level, ['--cpu-prof', `--cpu-prof-dir=${dir}`], compiled?.dir);
      let window: { fromUs: number; toUs: number } | undefined;
      try {
        const m = await measure(`project log=${level} offset=${offset} (under --cpu-prof)`, 'project', p.server, p.pathOf(offset), p.headers, { logLevel: level, offset });
        window = { fromUs: m.fromUs, toUs: m.toUs };
        results.push(m);
      } finally {
        await p.server.stop();
      }
      const files = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile'));
      if (files.length === 0) throw new Error(`no .cpuprofile written in ${dir}`);
      // the server's main thread is the busiest profile (tsx's loader thread writes one too, idle during the load)
      const busyMs = (x: ProfileSummary) => x.totalMs * (1 - x.idleShare);
      const summaries = files.map((f) => summarizeProfile(path.join(dir, f), 15, window)).sort((a, b) => busyMs(b) - busyMs(a));
      profiles.push({ offset, logLevel: level, summary: summaries[0]! });
    }
  }
} finally {
  compiled?.cleanup();
  if (profDir) await rm(profDir, { recursive: true, force: true });
}

const bares = results.filter((r) => r.target === 'bare' && !r.label.includes('cpu-prof'));
const bare = {
  reqPerSec: bares.length ? bares.reduce((a, r) => a + r.reqPerSec, 0) / bares.length : Number.NaN,
};
const main = results.filter((r) => r.target === 'project' && !r.label.includes('cpu-prof'));
console.log(`\nGET .../children?limit=100, ${entries} entries in the collection, ${connections} connections, ${duration} s each (+${warmup} s warm-up), server: ${mode}, ${os.cpus().length} cores, node ${process.version}`);
printTable(['run', 'req/s', 'x bare', 'p50 ms', 'p99 ms', 'non2xx+err', 'server cores', 'server ms/req', 'pg ms/req', 'loadgen cores', 'machine cores'],
  results.map((r) => [r.label, fmt(r.reqPerSec), r.target === 'bare' ? fmt(r.reqPerSec / bare.reqPerSec, 2) : `${fmt(r.reqPerSec / bare.reqPerSec, 2)}${r.reqPerSec / bare.reqPerSec >= 0.3 ? '' : ' (< 0.30)'}`,
    r.p50, r.p99, r.non2xx + r.errors + r.timeouts, fmt(r.serverCores, 2), fmt(r.serverCpuMsPerReq, 3), r.pgCpuMsPerReq === undefined ? '' : fmt(r.pgCpuMsPerReq, 3),
    fmt(r.loadgenCores, 2), fmt(r.machineCores, 2)]));
console.log(`bare floor (mean of before/after): ${fmt(bare.reqPerSec)} req/s; response body: project ${Object.values(projectBodyBytes)[0]?.[0] ?? '?'} bytes, bare ${bareBodyBytes} bytes`);
for (const p of profiles) {
  console.log(`\n--cpu-prof, log=${p.logLevel}, offset=${p.offset}:`);
  printSummary(p.summary);
}
const figures = {
  bench: 'children',
  entries, connections, duration, warmup, server: mode, cores: os.cpus().length, node: process.version, loadavg: os.loadavg(),
  seedMs, bodyBytes: { project: projectBodyBytes, bare: bareBodyBytes },
  bareReqPerSec: bare.reqPerSec,
  runs: results.map((r) => ({ ...r, ratioToBare: r.reqPerSec / bare.reqPerSec })),
  targetRatio: 0.3,
  // judged on the shipped configuration (listing cache on)
  targetMet: Object.fromEntries(main.filter((r) => r.label.includes('cache=on')).map((r) => [r.label, r.reqPerSec / bare.reqPerSec >= 0.3])),
  profiles,
};
console.log(JSON.stringify(figures));
writeResult('children', args, {
  figures,
  floors: { 'bare koa req/s (mean of before/after)': bare.reqPerSec },
  ratios: Object.fromEntries(main.map((r) => [r.label, r.reqPerSec / bare.reqPerSec])),
  // the shipped configuration (listing cache on) is judged; uncached runs are context
  targets: main.filter((r) => r.label.includes('cache=on')).map((r) => ({
    name: `${r.label} / bare koa`, value: r.reqPerSec / bare.reqPerSec, target: '>= 0.30', met: r.reqPerSec / bare.reqPerSec >= 0.3,
  })),
});
