/**
 * Sync contention benchmark (docs/benchmarks.md).
 *
 *   npm run bench:sync-contention -- [--files 10000] [--dirs 100] [--listers 20] [--duration 10] [--server tsx|compiled]
 *
 * Starts the server (bench/server.ts) as a child process, writes a tree of
 * `--files` files in `--dirs` directories straight into the `files`
 * (filesystem) repository's root, and lets one listing sync it. Then measures
 * another user's simple listing (GET …/repo/{uuid}/children of their own
 * 5-document collection, one request at a time) for `--duration` s alone, and
 * again while `--listers` read-only users run `GET …/repo?scope=all&limit=100`
 * in a loop (each listing syncs the whole tree). Prints p50/p99 of both
 * phases and their ratios and the listers' throughput and latency, then one
 * JSON line with every figure, and writes the result file (bench/results/,
 * lib.ts writeResult). Target: the other user's latency stays flat (the
 * ratios during/alone, recorded; no number is set) and no listing fails.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DevIssuer } from '../src/auth/dev-issuer.js';
import { compileServers, expectStatus, fmt, parseModes, printTable, requestJson, spawnServer, writeResult } from './lib.js';

const { values: args } = parseArgs({
  options: {
    files: { type: 'string', default: '10000' },
    dirs: { type: 'string', default: '100' },
    listers: { type: 'string', default: '20' },
    duration: { type: 'string', default: '10' },
    server: { type: 'string', default: 'compiled' },
  },
  strict: true,
});
const files = Number(args.files);
const dirs = Number(args.dirs);
const listers = Number(args.listers);
const duration = Number(args.duration);
const [mode] = parseModes(args.server);
if (!Number.isInteger(files) || files < 100 || files > 1_000_000) throw new Error('--files: 100 to 1000000');
if (!Number.isInteger(dirs) || dirs < 1 || dirs > files) throw new Error('--dirs: 1 to --files');
if (!Number.isInteger(listers) || listers < 1 || listers > 200) throw new Error('--listers: 1 to 200');
if (!(duration >= 1 && duration <= 600)) throw new Error('--duration: 1 to 600 s');

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

/** Sequential requests for `seconds`; latencies in ms. */
async function loop(seconds: number, once: () => Promise<void>, stop?: { done: boolean }): Promise<number[]> {
  const end = Date.now() + seconds * 1000;
  const out: number[] = [];
  while (stop ? !stop.done : Date.now() < end) {
    const t0 = process.hrtime.bigint();
    await once();
    out.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return out;
}

const compiled = mode === 'compiled' ? await compileServers() : undefined;
const server = await spawnServer('bench/server.ts', ['--log-level', 'warn'], [], { compiledDir: compiled?.dir });
try {
  const url = server.info.url;
  const dataDir = String(server.info.dataDir);
  const base = `${url}/v1/services/files/repo`;
  const issuer = await DevIssuer.open(dataDir, `${url}/dev-issuer`);
  const other = await issuer.mint({ user: 'other', roles: ['user'], expiresIn: 3600 });
  const reader = await issuer.mint({ user: 'reader', roles: ['readonly'], expiresIn: 3600 });
  const admin = String(server.info.token);

  const t0 = Date.now();
  const per = Math.ceil(files / dirs);
  for (let d = 0; d < dirs; d++) {
    const dir = path.join(dataDir, 'files', 'big', `d${String(d).padStart(4, '0')}`);
    await mkdir(dir, { recursive: true });
    const n = Math.min(per, files - d * per);
    await Promise.all(Array.from({ length: Math.max(0, n) }, (_, f) => writeFile(path.join(dir, `f${f}.txt`), `${d}/${f}`)));
  }
  const firstSync = Date.now();
  expectStatus(await requestJson('GET', `${base}?scope=all&limit=1`, admin, undefined, 300_000), 200, 'first scope=all listing');
  const firstSyncMs = Date.now() - firstSync;
  console.log(`tree: ${files} files in ${dirs} directories (written in ${Date.now() - t0} ms, first sync ${firstSyncMs} ms)`);

  const mine = await requestJson('POST', base, other, { name: 'mine', type: 'collection' });
  expectStatus(mine, 200, 'create collection');
  const mineId = (mine.body as { uuid: string }).uuid;
  for (let i = 0; i < 5; i++) expectStatus(await requestJson('POST', `${base}/${mineId}`, other, { name: `doc-${i}.txt` }), 200, 'create document');

  const simple = async () => expectStatus(await requestJson('GET', `${base}/${mineId}/children`, other), 200, 'simple listing');
  await loop(1, simple); // warm-up
  const alone = (await loop(duration, simple)).sort((a, b) => a - b);

  const stop = { done: false };
  let listings = 0;
  let failures = 0;
  const heavy = Array.from({ length: listers }, () => loop(0, async () => {
    const res = await requestJson('GET', `${base}?scope=all&limit=100`, reader, undefined, 300_000);
    if (res.status === 200) listings++;
    else failures++;
  }, stop));
  await new Promise((r) => setTimeout(r, 1000)); // let the listers get going
  const during = (await loop(duration, simple)).sort((a, b) => a - b);
  stop.done = true;
  const heavyLatencies = (await Promise.all(heavy)).flat().sort((a, b) => a - b);

  const row = (label: string, l: number[]) => [label, l.length, fmt(quantile(l, 0.5), 2), fmt(quantile(l, 0.99), 2), fmt(l.at(-1) ?? NaN, 2)];
  printTable(['simple listing of another user', 'n', 'p50 ms', 'p99 ms', 'max ms'], [
    row('alone', alone),
    row(`during ${listers} scope=all listers`, during),
  ]);
  const ratio = { p50: quantile(during, 0.5) / quantile(alone, 0.5), p99: quantile(during, 0.99) / quantile(alone, 0.99) };
  console.log(`ratio during/alone: p50 ${fmt(ratio.p50, 2)}x, p99 ${fmt(ratio.p99, 2)}x`);
  console.log(`scope=all listings: ${listings} completed (${failures} failed), p50 ${fmt(quantile(heavyLatencies, 0.5), 0)} ms, p99 ${fmt(quantile(heavyLatencies, 0.99), 0)} ms`);
  const figures = {
    bench: 'sync-contention', mode, files, dirs, listers, duration, firstSyncMs,
    alone: { n: alone.length, p50: quantile(alone, 0.5), p99: quantile(alone, 0.99), max: alone.at(-1) },
    during: { n: during.length, p50: quantile(during, 0.5), p99: quantile(during, 0.99), max: during.at(-1) },
    ratio,
    heavy: { completed: listings, failed: failures, p50: quantile(heavyLatencies, 0.5), p99: quantile(heavyLatencies, 0.99) },
  };
  console.log(JSON.stringify(figures));
  writeResult('sync-contention', args, {
    figures,
    floors: { 'listing alone p50 ms': figures.alone.p50, 'listing alone p99 ms': figures.alone.p99 },
    ratios: { 'p50 during / alone': ratio.p50, 'p99 during / alone': ratio.p99 },
    // "latency stays flat" has no number; the failures are countable
    targets: [{ name: 'scope=all listings failed', value: failures, target: '= 0', met: failures === 0 }],
  });
} finally {
  await server.stop();
  compiled?.cleanup();
}
