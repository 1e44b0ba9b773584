/**
 * Content transfer benchmark (docs/benchmarks.md).
 *
 *   npm run bench:transfer -- [--size 1024] [--runs 1] [--server tsx|compiled|tsx,compiled] [--dir /tmp]
 *
 * 1. Writes a file of `--size` MiB of random bytes (streamed, hashed on the way).
 * 2. Floor: copies it with fs.createReadStream -> fs.createWriteStream, and with fs.copyFile.
 * 3. Starts the server (bench/server.ts) as a child node process, uploads the
 *    file with http.request (PUT .../content, streamed), downloads it to a file
 *    (GET .../content, streamed) and checks the sha256 of both ends, while
 *    sampling the server's VmRSS every 50 ms (and reading VmHWM at the end).
 *
 * Before every timed step the previous step's output is deleted and `sync`
 * runs, so no step pays for another's dirty pages. Prints a table and, last, one
 * JSON line with every figure.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomFillSync } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { copyFile, mkdtemp, rm, stat } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import {
  compileServers, expectStatus, fmt, MiB, parseModes, printTable, procMemory, requestJson, RssSampler, spawnServer,
  type ChildServer, type ServerMode,
} from './lib.js';

const { values: args } = parseArgs({
  options: {
    size: { type: 'string', default: '1024' },
    runs: { type: 'string', default: '1' },
    server: { type: 'string', default: 'tsx' },
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

async function timed(fn: () => Promise<void>): Promise<number> {
  await rm(target, { force: true });
  syncDisks();
  const start = process.hrtime.bigint();
  await fn();
  return seconds(start);
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

interface ServerResult {
  mode: ServerMode;
  uploadS: number[];
  downloadS: number[];
  rssIdleBytes: number;
  rssPeakBytes: number;
  hwmBytes: number;
  rssSamples: number;
  clientRssPeakBytes: number;
  logBytes: number;
}

async function measureServer(mode: ServerMode, compiledDir: string | undefined, sha: string): Promise<ServerResult> {
  let server: ChildServer | undefined;
  try {
    server = await spawnServer('bench/server.ts', [], [], { compiledDir });
    const { url, token, pid } = server.info as { url: string; token: string; pid: number };
    await new Promise((r) => setTimeout(r, 1000)); // let startup settle (workers, first reconcile)
    const rssIdleBytes = procMemory(pid)?.rss ?? 0;
    const sampler = new RssSampler(pid, 50).start();
    const client = new RssSampler(process.pid, 50).start();
    const uploadS: number[] = [];
    const downloadS: number[] = [];
    for (let run = 0; run < runs; run++) {
      const made = await requestJson('POST', `${url}/v1/services/store/repo`, token, { name: `transfer-${run}.bin`, type: 'document' });
      expectStatus(made, 200, 'POST /v1/services/store/repo');
      const uuid = (made.body as { uuid: string }).uuid;

      let up: Awaited<ReturnType<typeof upload>> | undefined;
      uploadS.push(await timed(async () => {
        up = await upload(url, token, uuid);
      }));
      if (up!.status !== 204) throw new Error(`upload: expected HTTP 204, got ${up!.status}: ${up!.body.slice(0, 500)}`);
      if (up!.etag !== `"${sha}"`) throw new Error(`upload: ETag ${up!.etag} is not the source's sha256 "${sha}"`);

      let bytes = 0;
      downloadS.push(await timed(async () => {
        bytes = await download(url, token, uuid);
      }));
      if (bytes !== size) throw new Error(`download: got ${bytes} bytes, expected ${size}`);
      const got = await sha256Of(target);
      if (got !== sha) throw new Error(`download: sha256 ${got} differs from the source's ${sha}`);
      await rm(target, { force: true });
      console.error(`[${mode}] run ${run + 1}/${runs}: upload ${fmt(sizeMiB / uploadS.at(-1)!)} MiB/s, download ${fmt(sizeMiB / downloadS.at(-1)!)} MiB/s, sha256 ok`);
    }
    const rssPeakBytes = sampler.stop();
    const clientRssPeakBytes = client.stop();
    const hwmBytes = procMemory(pid)?.hwm ?? 0;
    return { mode, uploadS, downloadS, rssIdleBytes, rssPeakBytes, hwmBytes, rssSamples: sampler.samples, clientRssPeakBytes, logBytes: server.logBytes() };
  } finally {
    await server?.stop();
  }
}

let compiled: Awaited<ReturnType<typeof compileServers>> | undefined;
try {
  console.error(`generating ${sizeMiB} MiB of random bytes in ${source} ...`);
  const genStart = process.hrtime.bigint();
  const sha = await generate(source);
  const genS = seconds(genStart);
  if ((await stat(source)).size !== size) throw new Error('generated file has the wrong size');
  console.error(`generated in ${fmt(genS, 2)} s, sha256 ${sha}`);

  const streamCopyS: number[] = [];
  const copyFileS: number[] = [];
  for (let run = 0; run < runs; run++) {
    streamCopyS.push(await timed(() => pipeline(createReadStream(source), createWriteStream(target))));
    if ((await stat(target)).size !== size) throw new Error('stream copy has the wrong size');
    copyFileS.push(await timed(() => copyFile(source, target)));
    if ((await stat(target)).size !== size) throw new Error('copyFile copy has the wrong size');
    await rm(target, { force: true });
  }

  if (modes.includes('compiled')) compiled = await compileServers();
  const servers: ServerResult[] = [];
  for (const mode of modes) servers.push(await measureServer(mode, mode === 'compiled' ? compiled!.dir : undefined, sha));

  const rate = (s: number[]) => sizeMiB / median(s);
  const copyRate = rate(streamCopyS);
  const copyFileRate = rate(copyFileS);
  const rows: (string | number)[][] = [
    ['copy: createReadStream -> createWriteStream (floor)', fmt(copyRate), fmt(median(streamCopyS), 2), '1.00', fmt(copyRate / copyFileRate, 2)],
    ['copy: fs.copyFile', fmt(copyFileRate), fmt(median(copyFileS), 2), fmt(copyFileRate / copyRate, 2), '1.00'],
  ];
  for (const r of servers) {
    const up = rate(r.uploadS);
    const down = rate(r.downloadS);
    rows.push([`upload PUT .../content (server: ${r.mode})`, fmt(up), fmt(median(r.uploadS), 2), fmt(up / copyRate, 2), fmt(up / copyFileRate, 2)]);
    rows.push([`download GET .../content (server: ${r.mode})`, fmt(down), fmt(median(r.downloadS), 2), fmt(down / copyRate, 2), fmt(down / copyFileRate, 2)]);
  }
  console.log(`\ntransfer of ${sizeMiB} MiB, ${runs} run(s) (median), ${os.cpus().length} cores, node ${process.version}`);
  printTable(['step', 'MiB/s', 's', 'x stream copy', 'x copyFile'], rows);
  console.log('');
  printTable(['server', 'RSS idle MiB', 'RSS peak MiB (50 ms samples)', 'VmHWM MiB', 'target', 'client RSS peak MiB'],
    servers.map((r) => [r.mode, fmt(r.rssIdleBytes / MiB), fmt(r.rssPeakBytes / MiB), fmt(r.hwmBytes / MiB),
      r.rssPeakBytes < 200 * MiB ? '< 200: met' : '< 200: MISSED', fmt(r.clientRssPeakBytes / MiB)]));

  const result = {
    bench: 'transfer',
    sizeMiB,
    runs,
    cores: os.cpus().length,
    node: process.version,
    sha256: sha,
    generateS: genS,
    copyStream: { MiBps: copyRate, seconds: streamCopyS },
    copyFile: { MiBps: copyFileRate, seconds: copyFileS },
    servers: servers.map((r) => ({
      mode: r.mode,
      upload: { MiBps: rate(r.uploadS), seconds: r.uploadS, ratioToStreamCopy: rate(r.uploadS) / copyRate, ratioToCopyFile: rate(r.uploadS) / copyFileRate },
      download: { MiBps: rate(r.downloadS), seconds: r.downloadS, ratioToStreamCopy: rate(r.downloadS) / copyRate, ratioToCopyFile: rate(r.downloadS) / copyFileRate },
      sha256Verified: true,
      serverRssIdleMiB: r.rssIdleBytes / MiB,
      serverRssPeakMiB: r.rssPeakBytes / MiB,
      serverVmHWMMiB: r.hwmBytes / MiB,
      rssSamples: r.rssSamples,
      clientRssPeakMiB: r.clientRssPeakBytes / MiB,
      serverLogBytes: r.logBytes,
      targets: { transferRatio: 0.5, rssMiB: 200, uploadMet: rate(r.uploadS) / copyRate >= 0.5, downloadMet: rate(r.downloadS) / copyRate >= 0.5, rssMet: r.rssPeakBytes < 200 * MiB },
    })),
  };
  console.log(JSON.stringify(result));
} finally {
  compiled?.cleanup();
  await rm(work, { recursive: true, force: true });
}
