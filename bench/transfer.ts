/**
 * Content transfer benchmark (docs/benchmarks.md).
 *
 *   npm run bench:transfer -- [--size 1024] [--runs 3] [--server tsx|compiled|tsx,compiled] [--dir /tmp]
 *
 * 1. Writes a file of `--size` MiB of random bytes (streamed, hashed on the way).
 * 2. Floor: copies it with fs.createReadStream -> fs.createWriteStream, and with fs.copyFile.
 * 3. Starts the server (bench/server.ts) as a child node process, uploads the
 *    file with http.request (PUT .../content, streamed), downloads it to a file
 *    (GET .../content, streamed) and checks the sha256 of both ends, while
 *    sampling the server's VmRSS every 50 ms (and reading VmHWM at the end).
 *
 * Each run does the floor copies and then the API steps, so noise from other
 * load hits them alike; figures are medians over `--runs`. Before every timed
 * step the previous step's output is deleted and `sync` runs, so no step pays
 * for another's dirty pages. Prints a table and one JSON line with every
 * figure, and writes the result file (bench/results/, lib.ts writeResult).
 * Targets: each transfer >= 0.5 x the stream copy; the server's peak RSS < 200 MiB.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomFillSync } from 'node:crypto';
import { createReadStream, createWriteStream, rmSync } from 'node:fs';
import { copyFile, mkdtemp, rm, stat } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import {
  busyCores, compileServers, expectStatus, fmt, machineCpu, MiB, procCpuSeconds, parseModes, printTable, procMemory, requestJson, RssSampler, spawnServer,
  writeResult, type ChildServer, type ServerMode, type TargetResult,
} from './lib.js';

const { values: args } = parseArgs({
  options: {
    size: { type: 'string', default: '1024' },
    runs: { type: 'string', default: '3' },
    server: { type: 'string', default: 'compiled' },
    dir: { type: 'string', default: os.tmpdir() },
  },
  strict: true,
});
const sizeMiB = Number(args.size);
const runs = Number(args.runs);
if (!Number.isInteger(sizeMiB) || sizeMiB < 1 || sizeMiB > 16_384) throw new Error('--size: whole MiB between 1 and 16384');
if (!Number.isInteger(runs) || runs < 1 || runs > 10) throw new Error('--runs: 1 to 10');
const modes = parseModes(args.server);
const size = sizeMiB * MiB;

const work = await mkdtemp(path.join(args.dir, 'wcr-bench-transfer-'));
const source = path.join(work, 'source.bin');
const target = path.join(work, 'target.bin');

const syncDisks = () => execFileSync('sync', { timeout: 120_000 });
const seconds = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e9;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** Random bytes, 1 MiB per chunk, with backpressure; returns the sha256. */
async function generate(file: string): Promise<string> {
  const hash = createHash('sha256');
  const out = createWriteStream(file);
  for (let i = 0; i < sizeMiB; i++) {
    const chunk = randomFillSync(Buffer.allocUnsafe(MiB));
    hash.update(chunk);
    if (!out.write(chunk)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'close');
  return hash.digest('hex');
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file, { highWaterMark: MiB }), hash);
  return hash.digest('hex');
}

/** Machine-wide busy cores during each timed step, by step name (other people's load shows here). */
const busy: Record<string, number[]> = {};

/** CPU (in cores) of this process (the client) and of the server during each timed step. */
const cpu: Record<string, { client: number[]; server: number[] }> = {};

async function timed(step: string, fn: () => Promise<void>, serverPid?: number): Promise<number> {
  await rm(target, { force: true });
  syncDisks();
  const m0 = machineCpu();
  const c0 = process.cpuUsage();
  const s0 = serverPid ? procCpuSeconds(serverPid) ?? 0 : 0;
  const start = process.hrtime.bigint();
  await fn();
  const s = seconds(start);
  (busy[step] ??= []).push(busyCores(m0, machineCpu()));
  const c = process.cpuUsage(c0);
  const entry = (cpu[step] ??= { client: [], server: [] });
  entry.client.push((c.user + c.system) / 1e6 / s);
  if (serverPid) entry.server.push(((procCpuSeconds(serverPid) ?? 0) - s0) / s);
  return s;
}

function upload(url: string, token: string, uuid: string): Promise<{ status: number; etag: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/v1/services/store/repo/${uuid}/content`, {
      method: 'PUT',
      agent: false,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream', 'content-length': size },
    }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, etag: res.headers.etag, body }));
      res.on('error', reject);
    });
    req.setTimeout(600_000, () => req.destroy(new Error('upload timed out after 600 s')));
    req.on('error', reject);
    pipeline(createReadStream(source), req).catch(reject);
  });
}

async function download(url: string, token: string, uuid: string): Promise<number> {
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = http.get(`${url}/v1/services/store/repo/${uuid}/content`, { agent: false, headers: { authorization: `Bearer ${token}` } }, resolve);
    req.setTimeout(600_000, () => req.destroy(new Error('download timed out after 600 s')));
    req.on('error', reject);
  });
  if (res.statusCode !== 200) {
    res.resume();
    throw new Error(`download: expected HTTP 200, got ${res.statusCode}`);
  }
  let bytes = 0;
  const count = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      done(null, chunk);
    },
  });
  await pipeline(res, count, createWriteStream(target));
  return bytes;
}

interface Session {
  mode: ServerMode;
  server: ChildServer;
  url: string;
  token: string;
  pid: number;
  rssIdleBytes: number;
  sampler: RssSampler;
  uploadS: number[];
  downloadS: number[];
}

interface ServerResult {
  mode: ServerMode;
  uploadS: number[];
  downloadS: number[];
  rssIdleBytes: number;
  rssPeakBytes: number;
  hwmBytes: number;
  rssSamples: number;
  logBytes: number;
}

/** One upload and one download through a server, both checked against the source's sha256. */
async function transferOnce(x: Session, run: number, sha: string): Promise<void> {
  const made = await requestJson('POST', `${x.url}/v1/services/store/repo`, x.token, { name: `transfer-${run}.bin`, type: 'document' });
  expectStatus(made, 200, 'POST /v1/services/store/repo');
  const uuid = (made.body as { uuid: string }).uuid;

  let up: Awaited<ReturnType<typeof upload>> | undefined;
  x.uploadS.push(await timed(`upload ${x.mode}`, async () => {
    up = await upload(x.url, x.token, uuid);
  }, x.pid));
  if (up!.status !== 204) throw new Error(`upload: expected HTTP 204, got ${up!.status}: ${up!.body.slice(0, 500)}`);
  if (up!.etag !== `"${sha}"`) throw new Error(`upload: ETag ${up!.etag} is not the source's sha256 "${sha}"`);

  let bytes = 0;
  x.downloadS.push(await timed(`download ${x.mode}`, async () => {
    bytes = await download(x.url, x.token, uuid);
  }, x.pid));
  if (bytes !== size) throw new Error(`download: got ${bytes} bytes, expected ${size}`);
  const got = await sha256Of(target);
  if (got !== sha) throw new Error(`download: sha256 ${got} differs from the source's ${sha}`);
  await rm(target, { force: true });
  console.error(`[${x.mode}] run ${run + 1}/${runs}: upload ${fmt(sizeMiB / x.uploadS.at(-1)!)} MiB/s, download ${fmt(sizeMiB / x.downloadS.at(-1)!)} MiB/s, sha256 ok`);
}

let compiled: Awaited<ReturnType<typeof compileServers>> | undefined;
const sessions: Session[] = [];
// Ctrl-C: the servers get the signal too and clean up after themselves; remove our files
let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  // `on`, not `once`: tsx relays the terminal's SIGINT, so it can arrive twice
  process.on(sig, () => {
    if (interrupted) return;
    interrupted = true;
    for (const x of sessions) x.server.child.kill('SIGTERM');
    compiled?.cleanup();
    rmSync(work, { recursive: true, force: true });
    process.exit(130);
  });
}
try {
  console.error(`generating ${sizeMiB} MiB of random bytes in ${source} ...`);
  const genStart = process.hrtime.bigint();
  const sha = await generate(source);
  const genS = seconds(genStart);
  if ((await stat(source)).size !== size) throw new Error('generated file has the wrong size');
  console.error(`generated in ${fmt(genS, 2)} s, sha256 ${sha}`);

  if (modes.includes('compiled')) compiled = await compileServers();
  for (const mode of modes) {
    const server = await spawnServer('bench/server.ts', [], [], { compiledDir: mode === 'compiled' ? compiled!.dir : undefined });
    const { url, token, pid } = server.info as { url: string; token: string; pid: number };
    sessions.push({ mode, server, url, token, pid, rssIdleBytes: 0, sampler: new RssSampler(pid, 50), uploadS: [], downloadS: [] });
  }
  await new Promise((r) => setTimeout(r, 1500)); // let start-up settle (workers, first reconcile)
  for (const x of sessions) {
    x.rssIdleBytes = procMemory(x.pid)?.rss ?? 0;
    x.sampler.start();
  }
  const client = new RssSampler(process.pid, 50).start();

  // the floor and the API steps alternate, so a noisy neighbour hits them alike
  const streamCopyS: number[] = [];
  const copyFileS: number[] = [];
  for (let run = 0; run < runs; run++) {
    streamCopyS.push(await timed('copy stream', () => pipeline(createReadStream(source), createWriteStream(target))));
    if ((await stat(target)).size !== size) throw new Error('stream copy has the wrong size');
    copyFileS.push(await timed('copy copyFile', () => copyFile(source, target)));
    if ((await stat(target)).size !== size) throw new Error('copyFile copy has the wrong size');
    await rm(target, { force: true });
    console.error(`[floor] run ${run + 1}/${runs}: stream copy ${fmt(sizeMiB / streamCopyS.at(-1)!)} MiB/s, copyFile ${fmt(sizeMiB / copyFileS.at(-1)!)} MiB/s`);
    // rotate the servers' order per run: the step right after the floor copies tends to fare differently
    for (let i = 0; i < sessions.length; i++) await transferOnce(sessions[(i + run) % sessions.length]!, run, sha);
  }

  const clientRssPeakBytes = client.stop();
  const servers: ServerResult[] = sessions.map((x) => ({
    mode: x.mode, uploadS: x.uploadS, downloadS: x.downloadS, rssIdleBytes: x.rssIdleBytes,
    rssPeakBytes: x.sampler.stop(), hwmBytes: procMemory(x.pid)?.hwm ?? 0, rssSamples: x.sampler.samples, logBytes: x.server.logBytes(),
  }));

  const rate = (s: number[]) => sizeMiB / median(s);
  const busyOf = (step: string) => (busy[step] ?? []).map((b) => fmt(b, 2)).join(' ');
  const cpuOf = (step: string) => {
    const c = cpu[step];
    if (!c) return '';
    return `${fmt(median(c.client), 2)}${c.server.length ? ` / ${fmt(median(c.server), 2)}` : ''}`;
  };
  const range = (s: number[]) => `${fmt(sizeMiB / Math.max(...s), 0)}-${fmt(sizeMiB / Math.min(...s), 0)}`;
  const copyRate = rate(streamCopyS);
  const copyFileRate = rate(copyFileS);
  const rows: (string | number)[][] = [
    ['copy: createReadStream -> createWriteStream (floor)', fmt(copyRate), range(streamCopyS), fmt(median(streamCopyS), 2), '1.00', fmt(copyRate / copyFileRate, 2), cpuOf('copy stream'), busyOf('copy stream')],
    ['copy: fs.copyFile', fmt(copyFileRate), range(copyFileS), fmt(median(copyFileS), 2), fmt(copyFileRate / copyRate, 2), '1.00', cpuOf('copy copyFile'), busyOf('copy copyFile')],
  ];
  for (const r of servers) {
    const up = rate(r.uploadS);
    const down = rate(r.downloadS);
    rows.push([`upload PUT .../content (server: ${r.mode})`, fmt(up), range(r.uploadS), fmt(median(r.uploadS), 2), fmt(up / copyRate, 2), fmt(up / copyFileRate, 2), cpuOf(`upload ${r.mode}`), busyOf(`upload ${r.mode}`)]);
    rows.push([`download GET .../content (server: ${r.mode})`, fmt(down), range(r.downloadS), fmt(median(r.downloadS), 2), fmt(down / copyRate, 2), fmt(down / copyFileRate, 2), cpuOf(`download ${r.mode}`), busyOf(`download ${r.mode}`)]);
  }
  console.log(`\ntransfer of ${sizeMiB} MiB, ${runs} run(s) (median), ${os.cpus().length} cores, node ${process.version}`);
  printTable(['step', 'MiB/s (median)', 'min-max', 's (median)', 'x stream copy', 'x copyFile', 'cores client / server', 'machine busy cores per run'], rows);
  console.log('');
  printTable(['server', 'RSS idle MiB', 'RSS peak MiB (50 ms samples)', 'VmHWM MiB', 'target'],
    servers.map((r) => [r.mode, fmt(r.rssIdleBytes / MiB), fmt(r.rssPeakBytes / MiB), fmt(r.hwmBytes / MiB),
      r.rssPeakBytes < 200 * MiB ? '< 200: met' : '< 200: MISSED']));
  console.log(`client (this process) RSS peak: ${fmt(clientRssPeakBytes / MiB)} MiB`);

  const result = {
    bench: 'transfer',
    sizeMiB,
    runs,
    cores: os.cpus().length,
    node: process.version,
    loadavg: os.loadavg(),
    machineBusyCores: busy,
    processCores: cpu,
    sha256: sha,
    generateS: genS,
    copyStream: { MiBps: copyRate, seconds: streamCopyS },
    copyFile: { MiBps: copyFileRate, seconds: copyFileS },
    clientRssPeakMiB: clientRssPeakBytes / MiB,
    servers: servers.map((r) => ({
      mode: r.mode,
      upload: { MiBps: rate(r.uploadS), seconds: r.uploadS, ratioToStreamCopy: rate(r.uploadS) / copyRate, ratioToCopyFile: rate(r.uploadS) / copyFileRate },
      download: { MiBps: rate(r.downloadS), seconds: r.downloadS, ratioToStreamCopy: rate(r.downloadS) / copyRate, ratioToCopyFile: rate(r.downloadS) / copyFileRate },
      sha256Verified: true,
      serverRssIdleMiB: r.rssIdleBytes / MiB,
      serverRssPeakMiB: r.rssPeakBytes / MiB,
      serverVmHWMMiB: r.hwmBytes / MiB,
      rssSamples: r.rssSamples,
      serverLogBytes: r.logBytes,
      targets: { transferRatio: 0.5, rssMiB: 200, uploadMet: rate(r.uploadS) / copyRate >= 0.5, downloadMet: rate(r.downloadS) / copyRate >= 0.5, rssMet: r.rssPeakBytes < 200 * MiB },
    })),
  };
  console.log(JSON.stringify(result));
  const ratios: Record<string, number> = {};
  const targets: TargetResult[] = [];
  for (const r of result.servers) {
    ratios[`upload (${r.mode}) / stream copy`] = r.upload.ratioToStreamCopy;
    ratios[`download (${r.mode}) / stream copy`] = r.download.ratioToStreamCopy;
    ratios[`upload (${r.mode}) / copyFile`] = r.upload.ratioToCopyFile;
    ratios[`download (${r.mode}) / copyFile`] = r.download.ratioToCopyFile;
    targets.push(
      { name: `upload (${r.mode}) / stream copy`, value: r.upload.ratioToStreamCopy, target: '>= 0.5', met: r.targets.uploadMet },
      { name: `download (${r.mode}) / stream copy`, value: r.download.ratioToStreamCopy, target: '>= 0.5', met: r.targets.downloadMet },
      { name: `server peak RSS (${r.mode}), MiB`, value: r.serverRssPeakMiB, target: '< 200 MiB', met: r.targets.rssMet },
    );
  }
  writeResult('transfer', args, { figures: result, floors: { 'stream copy MiB/s': copyRate, 'copyFile MiB/s': copyFileRate }, ratios, targets });
} finally {
  for (const x of sessions) {
    x.sampler.stop();
    await x.server.stop();
  }
  compiled?.cleanup();
  await rm(work, { recursive: true, force: true });
}
