/** Shared helpers of the benchmarks: child servers, /proc sampling, small HTTP calls, the JSON result file. */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface ServerInfo {
  /** Which helper printed the line ('server', 'bare'). */
  bench: string;
  url: string;
  pid: number;
  token?: string;
  schema?: string;
  prefix?: string;
  dataDir?: string;
  /** bare-server.ts: the task id its durable floor answers. */
  statusTid?: string;
  logLevel?: string;
  [key: string]: unknown;
}

export interface ChildServer {
  info: ServerInfo;
  child: ChildProcess;
  /** Bytes the child wrote on stdout after its ready line (its logs). */
  logBytes(): number;
  /** SIGTERM, then wait (bounded) for exit; SIGKILL if it hangs. */
  stop(timeoutMs?: number): Promise<number | null>;
}

/**
 * Spawns `node [nodeArgs] --import tsx <script> [args]` (the child is the node
 * process itself, so its pid is the server's) and waits for the stdout line
 * that parses as JSON with `bench`, `url` and `pid` (pino log lines also carry
 * `pid` and sometimes `url`, hence the `bench` marker). Later stdout (logs) is counted and
 * discarded; stderr is passed through.
 */
export function spawnServer(script: string, args: string[] = [], nodeArgs: string[] = [], opts: { compiledDir?: string; timeoutMs?: number; cwd?: string; env?: Record<string, string> } = {}): Promise<ChildServer> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  // compiled: the same file, built to JavaScript by compileServers(), run by plain node (as in production)
  const entry = opts.compiledDir
    ? [path.join(opts.compiledDir, script.replace(/\.ts$/, '.js'))]
    : ['--import', 'tsx', path.join(ROOT, script)];
  // cwd: where the server finds config/ (an older checkout's server must read its own configuration)
  const child = spawn(process.execPath, [...nodeArgs, ...entry, ...args], {
    cwd: opts.cwd ?? ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
    ...(opts.env ? { env: { ...process.env, ...opts.env } } : {}),
  });
  let logBytes = 0;
  let buffered = '';
  let ready = false;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise<ChildServer>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script} did not print its ready line within ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    void exited.then((code) => {
      if (!ready) {
        clearTimeout(timer);
        reject(new Error(`${script} exited with code ${code} before it was ready`));
      }
    });
    child.stdout!.on('data', (chunk: Buffer) => {
      if (ready) {
        logBytes += chunk.length;
        return;
      }
      buffered += chunk.toString('utf8');
      // bounded: one pass over the complete lines received so far
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        if (ready) {
          logBytes += line.length + 1;
          continue;
        }
        let parsed: unknown;
        try {
          parsed = JSON.parse(line);
        } catch {
          continue;
        }
        const p = parsed as Partial<ServerInfo>;
        if (typeof p.bench === 'string' && typeof p.url === 'string' && typeof p.pid === 'number') {
          ready = true;
          clearTimeout(timer);
          const info = p as ServerInfo;
          if (info.pid !== child.pid) {
            reject(new Error(`${script} reported pid ${info.pid} but the spawned process is ${child.pid}`));
            child.kill('SIGKILL');
            return;
          }
          resolve({
            info,
            child,
            logBytes: () => logBytes,
            stop: async (stopTimeoutMs = 40_000) => {
              if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
              child.kill('SIGTERM');
              const t = setTimeout(() => child.kill('SIGKILL'), stopTimeoutMs);
              const code = await exited;
              clearTimeout(t);
              child.stdin?.destroy();
              return code;
            },
          });
        } else {
          logBytes += line.length + 1;
        }
      }
      if (ready) logBytes += buffered.length;
    });
  });
}

/** Reads `VmRSS`, `VmHWM` (bytes) of a process from /proc; undefined when it is gone. */
export function procMemory(pid: number): { rss: number; hwm: number } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const kb = (key: string) => {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : 0;
  };
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** User+system CPU time of a process in seconds (from /proc/<pid>/stat). */
/** A bench/server.ts child's processes: the API (or the whole runtime) and, with --workers, its worker processes. */
export const serverPids = (info: ServerInfo): number[] => [info.pid, ...((info.workerPids as number[] | undefined) ?? [])];

/** User + system CPU seconds summed over processes (bench/server.ts --workers: the API and its workers). */
export function procCpuSplitOf(pids: readonly number[]): { user: number; system: number } | undefined {
  let user = 0;
  let system = 0;
  for (const pid of pids) {
    const s = procCpuSplit(pid);
    if (!s) return undefined;
    user += s.user;
    system += s.system;
  }
  return { user, system };
}

export function procCpuSeconds(pid: number): number | undefined {
  const split = procCpuSplit(pid);
  return split && split.user + split.system;
}

/**
 * CPU seconds (user + system) of each thread of a process, by thread id
 * (/proc/<pid>/task/<tid>/stat). The main thread's id is the pid; node names
 * all its threads "node", so a worker thread is told by its CPU alone.
 */
export function threadCpuSeconds(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
      out.set(Number(tid), (Number(fields[11]) + Number(fields[12])) / 100); // USER_HZ is 100 on Linux
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** User and system CPU time of a process in seconds, apart (system: syscalls, including loopback socket delivery). */
export function procCpuSplit(pid: number): { user: number; system: number } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // fields after the ")" of the command name; utime and stime are fields 14 and 15
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { user: Number(rest[11]) / 100, system: Number(rest[12]) / 100 }; // USER_HZ is 100 on Linux
}

/** Machine-wide CPU jiffies (all cores) from /proc/stat: busy and total. */
export function machineCpu(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return { busy: total - idle, total };
}

/** Average number of busy cores machine-wide between two machineCpu() snapshots. */
export function busyCores(a: { busy: number; total: number }, b: { busy: number; total: number }): number {
  return ((b.busy - a.busy) / (b.total - a.total || 1)) * os.cpus().length;
}

/** Samples a process's VmRSS every `everyMs` and keeps the maximum. */
export class RssSampler {
  peak = 0;
  samples = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly pid: number, private readonly everyMs = 50) {}

  start(): this {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.everyMs);
    return this;
  }

  sample(): void {
    const m = procMemory(this.pid);
    if (!m) return;
    this.samples += 1;
    if (m.rss > this.peak) this.peak = m.rss;
  }

  stop(): number {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.sample();
    return this.peak;
  }
}

export interface JsonResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: unknown;
  raw: Buffer;
}

/** A small JSON request over a fresh connection (bounded by `timeoutMs`). */
export function requestJson(method: string, url: string, token: string | undefined, json?: unknown, timeoutMs = 30_000): Promise<JsonResponse> {
  return new Promise((resolve, reject) => {
    const payload = json === undefined ? undefined : Buffer.from(JSON.stringify(json));
    const headers: Record<string, string | number> = {};
    if (token) headers.authorization = `Bearer ${token}`;
    if (payload) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = payload.length;
    }
    const req = http.request(url, { method, headers, timeout: timeoutMs, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        let body: unknown = raw.toString('utf8');
        if ((res.headers['content-type'] ?? '').includes('json') && raw.length > 0) {
          try {
            body = JSON.parse(raw.toString('utf8'));
          } catch {
            // keep the text
          }
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, raw });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${url} timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** Throws a readable error unless the response has the expected status. */
export function expectStatus(res: JsonResponse, expected: number, what: string): void {
  if (res.status !== expected) {
    throw new Error(`${what}: expected HTTP ${expected}, got ${res.status}: ${res.raw.toString('utf8').slice(0, 500)}`);
  }
}

export const MiB = 1024 * 1024;
export const fmt = (n: number, digits = 1) => n.toFixed(digits);

/** Prints rows as an aligned text table: the first `leftColumns` columns (1) left-aligned, the rest right-aligned. */
export function printTable(header: string[], rows: (string | number)[][], leftColumns = 1): void {
  const cells = [header, ...rows.map((r) => r.map(String))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((c, i) => (i < leftColumns ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of cells.slice(1)) console.log(line(r));
}

export type ServerMode = 'tsx' | 'compiled';

export function parseModes(raw: string): ServerMode[] {
  const modes = raw.split(',').map((m) => m.trim()).filter(Boolean);
  for (const m of modes) if (m !== 'tsx' && m !== 'compiled') throw new Error(`--server: "${m}" is not tsx or compiled`);
  if (modes.length === 0) throw new Error('--server: give tsx, compiled or tsx,compiled');
  return modes as ServerMode[];
}

/**
 * Builds src/ and the bench servers to JavaScript in a temporary directory with
 * the project's compiler (as `npm run build` does for dist/, without touching
 * dist/), so a server can run under plain `node` without the tsx loader.
 * `--noCheck`: emit only; type errors are the typecheck's business, not the benchmark's.
 * `root`: another checkout of the project (a before/after comparison), built with this one's compiler and node_modules.
 */
export async function compileServers(root = ROOT): Promise<{ dir: string; cleanup(): void }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wcr-bench-dist-'));
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  try {
    await new Promise<void>((resolve, reject) => {
      execFile(process.execPath, [path.join(ROOT, 'node_modules/typescript7/bin/tsc'), '-p', path.join(root, 'bench/tsconfig.server.json'), '--outDir', dir, '--noCheck'],
        { cwd: root, timeout: 300_000 }, (err, stdout, stderr) => (err ? reject(new Error(`tsc failed: ${stdout}${stderr}`)) : resolve()));
    });
    // the stores' statements (.sql beside their modules), which tsc does not copy
    await new Promise<void>((resolve, reject) => {
      execFile(process.execPath, [path.join(ROOT, 'scripts/copy-sql.mjs'), path.join(root, 'src'), path.join(dir, 'src')],
        { cwd: root, timeout: 60_000 }, (err, stdout, stderr) => (err ? reject(new Error(`copying .sql failed: ${stdout}${stderr}`)) : resolve()));
    });
    // bare imports ('koa', 'pg', ...) resolve through the project's node_modules
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    // the docs routes look for openapi/ above their module
    symlinkSync(path.join(root, 'openapi'), path.join(dir, 'openapi'), 'dir');
  } catch (err) {
    cleanup();
    throw err;
  }
  return { dir, cleanup };
}

/**
 * The PostgreSQL backends of one bench server (bench/server.ts sets
 * application_name to its schema), to read their CPU from /proc.
 */
export async function backendPids(databaseUrl: string, appName: string): Promise<number[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [appName]);
    return rows.map((r) => r.pid);
  } finally {
    await client.end();
  }
}

/**
 * Read and write system calls a process made so far (`syscr` + `syscw` of
 * `/proc/<pid>/io`: read(2) and write(2)/writev(2), i.e. for a Node process
 * every socket read and write: PostgreSQL and Redis round trips, HTTP
 * answers). A count, so unlike CPU time it does not swell with machine load.
 */
export function procSyscalls(pid: number): number | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/io`, 'utf8');
  } catch {
    return undefined;
  }
  const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
  return field('syscr') + field('syscw');
}

/** User+system CPU seconds of several processes together. */
export const cpuOf = (pids: number[]): number => pids.reduce((a, pid) => a + (procCpuSeconds(pid) ?? 0), 0);

/**
 * A JSON request with a bearer token on a keep-alive agent; resolves with the
 * status, the parsed body and the moment the answer was complete (epoch ms).
 */
export function jsonCall(agent: http.Agent, method: string, url: string, token: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown>; at: number }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request(url, {
      method, agent, timeout: 60_000,
      headers: { authorization: `Bearer ${token}`, ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const at = performance.timeOrigin + performance.now();
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) as Record<string, unknown> : {}, at });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${url} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * CPU of the PostgreSQL backends of the system under test (found by the
 * application_name the pool sets), sampled every 200 ms so a backend
 * the pool closes during a phase still counts up to its last sample.
 */
export function pgCpuMeter(db: pg.Client | undefined, appName: string) {
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  let stopped = false;
  const sample = async () => {
    if (!db) return;
    const { rows } = await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [appName]);
    for (const { pid } of rows) {
      const cpu = procCpuSeconds(pid);
      if (cpu === undefined) continue;
      // a backend already there at the start counts from then; one opened later from its start
      if (!first.has(pid)) first.set(pid, started ? 0 : cpu);
      last.set(pid, cpu);
    }
  };
  let started = false;
  const loop = (async () => {
    await sample();
    started = true;
    while (!stopped) {
      await new Promise((r) => setTimeout(r, 200));
      // a run that failed closes its client without stopping the meter: end quietly, so the run's own error is the one shown
      if (!(await sample().then(() => true, () => false))) return;
    }
  })();
  return {
    ready: async () => {
      while (!started) await new Promise((r) => setTimeout(r, 5));
    },
    /** Seconds of backend CPU since the meter started. */
    async stop(): Promise<number> {
      stopped = true;
      await loop;
      await sample();
      let sum = 0;
      for (const [pid, v] of last) sum += v - (first.get(pid) ?? 0);
      return sum;
    },
  };
}

/**
 * Deletes every Redis key under a bench's prefix (`<prefix>:*`: BullMQ's
 * queues, ids, events, schedulers), as its schema is dropped. SCAN, not KEYS,
 * so a shared Redis is not blocked; bounded, since a bench prefix holds a few
 * dozen keys.
 */
export async function dropRedisPrefix(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2 });
  try {
    await redis.connect();
    let cursor = '0';
    for (let i = 0; i < 10_000; i++) {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
      if (cursor === '0') break;
    }
  } finally {
    redis.disconnect();
  }
}

/** One target of a benchmark, judged on one measured value. */
export interface TargetResult {
  /** What is judged, e.g. `upload (compiled) / stream copy`. */
  name: string;
  /** The measured value (a ratio, or a figure in the unit the condition names). */
  value: number;
  /** The condition, e.g. `>= 0.9` or `< 200 MiB`. */
  target: string;
  met: boolean;
}

/** What a benchmark hands to writeResult. */
export interface BenchResult {
  /** Every figure measured: the object of the JSON line the benchmark prints. */
  figures: unknown;
  /** The floors, by name, in their own unit (jobs/s, req/s, MiB/s, ...). */
  floors: Record<string, number>;
  /** The ratios to the floors (and context ratios), by name. */
  ratios: Record<string, number>;
  /** The targets; none for the helper benchmarks, which compare variants. */
  targets: TargetResult[];
}

/**
 * Writes a benchmark's result to `bench/results/<bench>-<UTC time>-<short commit>.json`
 * (of this checkout) with the command line, the commit, the machine (cores, CPU
 * model, memory, load), every figure, the floors, the ratios and the targets, and
 * prints the file's path on stdout (`result file: <path>`). `opts.root`: the
 * checkout whose commit the figures belong to (bench/all.ts --tree), this one by
 * default. Returns the path.
 */
export function writeResult(bench: string, options: Record<string, unknown>, result: BenchResult, opts: { root?: string } = {}): string {
  const root = opts.root ?? ROOT;
  const git = (...a: string[]): string | undefined => {
    try {
      return execFileSync('git', a, { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
    } catch {
      return undefined;
    }
  };
  const id = git('rev-parse', 'HEAD');
  const short = git('rev-parse', '--short', 'HEAD') ?? 'nogit';
  const changed = git('status', '--porcelain', '--untracked-files=no');
  const cpuinfo = (() => {
    try {
      return readFileSync('/proc/cpuinfo', 'utf8');
    } catch {
      return '';
    }
  })();
  const finite = (r: Record<string, number>) => Object.fromEntries(Object.entries(r).filter(([, v]) => Number.isFinite(v)));
  const now = new Date();
  const met = result.targets.length === 0 ? null : result.targets.every((t) => t.met);
  const doc = {
    bench,
    time: now.toISOString(),
    command: { argv: process.argv.slice(2), options },
    commit: { id: id ?? null, short, changed: changed === undefined ? null : changed.length > 0, root },
    machine: {
      nproc: os.availableParallelism(),
      cpuModel: /^model name\s*:\s*(.*)$/m.exec(cpuinfo)?.[1] ?? os.cpus()[0]?.model ?? null,
      memTotalBytes: os.totalmem(),
      kernel: os.release(),
      node: process.version,
      loadavg: os.loadavg(),
    },
    // a floor or ratio not measured in this run (NaN) is left out
    floors: finite(result.floors),
    ratios: finite(result.ratios),
    targets: result.targets,
    met,
    figures: result.figures,
  };
  const dir = path.join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const stamp = now.toISOString().replace(/\.\d+Z$/, 'Z').replace(/:/g, '-');
  const file = path.join(dir, `${bench}-${stamp}-${short}.json`);
  writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
  console.log(`result file: ${path.relative(process.cwd(), file) || file}`);
  return file;
}

/**
 * A floor server's ending: on SIGTERM, SIGINT or its stdin closing (the
 * benchmark gone), `cleanup` runs once, then the process exits 0; a cleanup
 * that fails (the database gone first) or takes over 10 s still ends it,
 * with 1.
 */
export function exitOnStop(name: string, cleanup: () => Promise<void>): void {
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(1), 10_000).unref();
    cleanup().then(() => process.exit(0), (err: unknown) => {
      console.error(`${name}: cleanup failed`, err);
      process.exit(1);
    });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.stdin.on('end', stop);
  process.stdin.on('error', stop);
  process.stdin.resume();
}
