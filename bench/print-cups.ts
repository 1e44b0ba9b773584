/**
 * Printing against CUPS (issue 22): jobs per second from the first
 * submission to the last byte received at the printers, this project against
 * CUPS on the same machine and the same printers, in one run.
 *
 * - The printers: 20 raw-socket sinks (TCP, 127.0.0.1) in a child process
 *   (bench/sinks.ts); a job counts once its connection closed.
 * - CUPS (the floor): Debian's `cupsd`, started by this benchmark with its own
 *   configuration, state and spool under a temporary directory (never the
 *   system's CUPS), listening on 127.0.0.1 and a socket of its own; 20 raw
 *   queues (`lpadmin -m raw`, `socket://127.0.0.1:<sink port>`); 2,000 jobs of
 *   20 KiB submitted with `lp -d <queue> <file>` by 4, then 16 submitters (one
 *   `lp` process per job, as a script or a desktop prints).
 * - This project: a real server process built with tsc (bench/server.ts,
 *   role `all`, the shipped configuration), 20 printers with the same sinks,
 *   the same 2,000 jobs as `POST /v3/jobs/?printer=…` bodies from 4, then 16
 *   HTTP clients (keep-alive), each request's time kept (p50, p99).
 * - ippeveprinter (project only): `--ipp-jobs` jobs to `--ipp-printers` CUPS
 *   `ippeveprinter` processes (test/helpers/ippeveprinter.ts), to the last
 *   document in their spools and to the last job `processed`; an IPP delivery
 *   is followed with Get-Job-Attributes until completed, which bounds a
 *   printer's jobs per second (see docs/benchmarks.md).
 *
 * - The durable floor (context, `--floor on`): bench/durable-print-floor.ts,
 *   the least a server needs to take the same jobs over HTTP (one committed
 *   row each) and hand them at most once to the same sinks (the hand-off
 *   committed before the first byte), with none of the project's rules; the
 *   same clients. What the machine allows any durable print server.
 *
 * Targets: the project >= 10 x CUPS at 4 submitters, and the project's rate
 * growing with clients (16 clients >= 1.5 x 4 clients). Prints tables and one
 * JSON line and writes bench/results/print-cups-*.json.
 *
 * CUPS: when `cupsd`, `lp` or `lpadmin` is missing and this runs as root, the
 * benchmark installs Debian's `cups`, `cups-client` and `cups-bsd` (apt-get);
 * tests never need CUPS. ippeveprinter needs `cups-ipp-utils` with D-Bus and
 * avahi-daemon running (scripts/lib/common.sh ensure_ipp_printer).
 *
 * `--count-sql`: the server's statements (the ten most frequent with their
 * mean round trip), socket writes by peer and mean request time, per job, in
 * each project phase.
 *
 * Run: npm run bench:print-cups [-- --count-sql --jobs 2000 --printers 20 --bytes 20480 --clients 4,16 --ipp-printers 4 --ipp-jobs 200 --cups on|off --floor on|off --ipp on|off --server compiled|tsx]
 * Needs PostgreSQL (127.0.0.1:5432, db test) and Redis (127.0.0.1:6379).
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { IppEvePrinter } from '../test/helpers/ippeveprinter.js';
import { compileServers, expectStatus, fmt, pgCpuMeter, printTable, requestJson, spawnServer, writeResult, type ChildServer, type TargetResult, ROOT } from './lib.js';
import { startSinks, waitReceived, withClients, type Sinks } from './sinks.js';

const { values: args } = parseArgs({
  options: {
    jobs: { type: 'string', default: '2000' },
    printers: { type: 'string', default: '20' },
    bytes: { type: 'string', default: '20480' },
    clients: { type: 'string', default: '4,16' },
    'ipp-printers': { type: 'string', default: '4' },
    'ipp-jobs': { type: 'string', default: '200' },
    cups: { type: 'string', default: 'on' },
    ipp: { type: 'string', default: 'on' },
    // the durable floor (bench/durable-print-floor.ts): the same jobs over HTTP, one committed row, at most once to the same sinks
    floor: { type: 'string', default: 'on' },
    server: { type: 'string', default: 'compiled' },
    // the server's statements, round trips and socket writes per job in each project phase (bench/server.ts --count-sql)
    'count-sql': { type: 'boolean', default: false },
  },
  strict: true,
});
const JOBS = Number(args.jobs);
const PRINTERS = Number(args.printers);
const BYTES = Number(args.bytes);
const CLIENTS = args.clients.split(',').map(Number);
const IPP_PRINTERS = Number(args['ipp-printers']);
const IPP_JOBS = Number(args['ipp-jobs']);
const DB_URL = 'postgresql://postgres@127.0.0.1:5432/test';

const payload = (n: number) => Buffer.concat([Buffer.from(`bench job ${n}\n`), Buffer.alloc(BYTES, 0x41)]).subarray(0, BYTES);
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

/** CPU seconds of a process and of its children it waited for (utime, stime, cutime, cstime of /proc/<pid>/stat). */
function cpuWithChildren(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12]) + Number(rest[13]) + Number(rest[14])) / 100; // USER_HZ is 100 on Linux
  } catch {
    return NaN;
  }
}

/** This process's waited-for children's CPU seconds (cutime, cstime): the `lp` processes it ran. */
function childrenCpu(): number {
  const f = readFileSync('/proc/self/stat', 'utf8');
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[13]) + Number(rest[14])) / 100;
}

/**
 * CPU a system spends on a phase, in seconds (`system`): the project's server
 * process and its PostgreSQL backends (found by application_name, its
 * schema); CUPS's cupsd with the backends it ran (its children). `clients`:
 * the `lp` processes (CUPS's clients; the project's HTTP clients run in this
 * process and are not counted). The sinks are left out on both sides. On a
 * machine shared with other work this moves much less than jobs per second.
 */
interface CpuMeter {
  stop(): Promise<{ system: number; clients: number }>;
}
async function cpuMeter(what: { server: ChildServer; db: pg.Client } | { cupsd: number }): Promise<CpuMeter> {
  if ('cupsd' in what) {
    const t0 = cpuWithChildren(what.cupsd);
    const c0 = childrenCpu();
    return { stop: async () => ({ system: cpuWithChildren(what.cupsd) - t0, clients: childrenCpu() - c0 }) };
  }
  const pgMeter = pgCpuMeter(what.db, what.server.info.schema!);
  await pgMeter.ready();
  const t0 = cpuWithChildren(what.server.info.pid);
  return { stop: async () => ({ system: cpuWithChildren(what.server.info.pid) - t0 + (await pgMeter.stop()), clients: 0 }) };
}

interface Phase {
  clients: number;
  jobs: number;
  seconds: number;
  perSecond: number;
  /** Submissions alone: the first to the last answered. */
  submittedPerSecond: number;
  /** One submission's time (an `lp` process, or one HTTP request), ms. */
  p50: number;
  p99: number;
  /** CPU ms per job of the system under test, and of CUPS's `lp` processes (cpuMeter). */
  cpuMsPerJob: number;
  clientCpuMsPerJob: number;
}

/** Times `count` submissions by `clients` at once, from the first to the last job received at the sinks (`done`). */
async function phase(clients: number, count: number, submitOne: (i: number) => Promise<void>, done: () => Promise<void>, meter: () => Promise<CpuMeter>): Promise<Phase> {
  const took: number[] = [];
  const cpu = await meter();
  const t0 = performance.now();
  await withClients(count, clients, async (i) => {
    const s = performance.now();
    await submitOne(i);
    took.push(performance.now() - s);
  });
  const submitted = (performance.now() - t0) / 1000;
  await done();
  const seconds = (performance.now() - t0) / 1000;
  const used = await cpu.stop();
  const cpuMsPerJob = (used.system * 1000) / count;
  const clientCpuMsPerJob = (used.clients * 1000) / count;
  return { clients, jobs: count, seconds, perSecond: count / seconds, submittedPerSecond: count / submitted, p50: quantile(took, 0.5), p99: quantile(took, 0.99), cpuMsPerJob, clientCpuMsPerJob };
}

// ---------------------------------------------------------------- CUPS

const has = (cmd: string) => {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

/** cupsd, lp and lpadmin, installed from Debian's packages when missing (root only). */
function ensureCups(): void {
  if (['cupsd', 'lp', 'lpadmin'].every(has) && has('/usr/sbin/cupsd')) return;
  if (process.getuid?.() !== 0) throw new Error('CUPS is missing: apt-get install -y --no-install-recommends cups cups-client cups-bsd');
  console.log('installing CUPS (cups cups-client cups-bsd) with apt-get for this benchmark');
  execFileSync('apt-get', ['install', '-y', '--no-install-recommends', 'cups', 'cups-client', 'cups-bsd'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

const run = (cmd: string, argv: string[], env: NodeJS.ProcessEnv) => new Promise<void>((resolve, reject) => {
  execFile(cmd, argv, { env }, (err, _stdout, stderr) => (err ? reject(new Error(`${cmd} ${argv.join(' ')}: ${stderr || err.message}`)) : resolve()));
});

const freePort = () => new Promise<number>((resolve) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => {
    const { port } = s.address() as net.AddressInfo;
    s.close(() => resolve(port));
  });
});

interface Cups {
  pid: number;
  env: NodeJS.ProcessEnv;
  queues: string[];
  stop(): Promise<void>;
}

/**
 * A cupsd of this benchmark's own: configuration, state, cache, logs and spool
 * under a temporary directory, listening on 127.0.0.1:<free port> and on a
 * socket there (what `lp` talks to, as the system's lp uses CUPS's socket);
 * anyone may submit and administer (no authentication: loopback only). Its
 * defaults otherwise, but no limit on the number of jobs (MaxJobs 0: the
 * default 500 would refuse the 2,000 jobs of a burst).
 */
async function startCups(sinkPorts: number[]): Promise<Cups> {
  ensureCups();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'wcr-bench-cups-'));
  await chmod(dir, 0o755);
  for (const d of ['etc', 'spool', 'tmp', 'state', 'cache', 'log']) await mkdir(path.join(dir, d), { mode: 0o755 });
  const sock = path.join(dir, 'cups.sock');
  const port = await freePort();
  await writeFile(path.join(dir, 'etc/cupsd.conf'), [
    `Listen 127.0.0.1:${port}`, `Listen ${sock}`, 'LogLevel warn', 'MaxJobs 0', 'Browsing No', 'WebInterface No', 'DefaultAuthType None',
    '<Location />', '  Order allow,deny', '  Allow all', '</Location>',
    '<Location /admin>', '  Order allow,deny', '  Allow all', '</Location>',
    '<Policy default>', '  <Limit All>', '    Order allow,deny', '    Allow all', '  </Limit>', '</Policy>', '',
  ].join('\n'));
  await writeFile(path.join(dir, 'etc/cups-files.conf'), [
    `ServerRoot ${dir}/etc`, `RequestRoot ${dir}/spool`, `TempDir ${dir}/tmp`, `StateDir ${dir}/state`, `CacheDir ${dir}/cache`,
    `ErrorLog ${dir}/log/error_log`, `AccessLog ${dir}/log/access_log`, `PageLog ${dir}/log/page_log`, 'Sandboxing relaxed', '',
  ].join('\n'));
  const child: ChildProcess = spawn('cupsd', ['-f', '-c', path.join(dir, 'etc/cupsd.conf'), '-s', path.join(dir, 'etc/cups-files.conf')], { stdio: 'inherit' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const env = { PATH: process.env.PATH, CUPS_SERVER: sock };
  const deadline = Date.now() + 30_000;
  while (!(await new Promise<boolean>((resolve) => {
    const s = net.connect(sock, () => {
      s.destroy();
      resolve(true);
    }).once('error', () => resolve(false));
  }))) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`cupsd did not start (see ${dir}/log/error_log)`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const queues = sinkPorts.map((_, i) => `bench${i}`);
  // raw queues: no filter, CUPS's socket backend sends the file as it is (deprecated in CUPS 2.4, still what a raw printer is)
  for (const [i, p] of sinkPorts.entries()) await run('lpadmin', ['-p', queues[i]!, '-E', '-v', `socket://127.0.0.1:${p}`, '-m', 'raw'], env);
  return {
    pid: child.pid!, env, queues,
    async stop() {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------- this project

/** POST one document; resolves with the status once the answer is read. */
function post(agent: http.Agent, url: URL, token: string, body: Buffer, type: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST', agent,
      headers: { authorization: `Bearer ${token}`, 'content-type': type, 'content-length': body.length },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function addPrinter(server: ChildServer, name: string, connection: string): Promise<void> {
  expectStatus(await requestJson('POST', `${server.info.url}/v3/printers/`, server.info.token, { name, connection }), 200, `printer ${name}`);
}

/** Submits job `n` (of a phase starting at `base`) to `printer(n)` over HTTP. */
function submitter(server: ChildServer, agent: http.Agent, printer: (n: number) => string, base: number, type = 'application/octet-stream') {
  return async (i: number) => {
    const n = base + i;
    const url = new URL(`/v3/jobs/?printer=${encodeURIComponent(printer(n))}&name=job-${n}`, server.info.url);
    const status = await post(agent, url, server.info.token!, payload(n), type);
    if (status !== 201) throw new Error(`POST /v3/jobs/ answered ${status}`);
  };
}

/** Jobs of printers named `prefix…` that are `processed`, read from the server's schema; a job in `error` stops the benchmark. */
async function processedCount(server: ChildServer, prefix: string): Promise<number> {
  const db = new pg.Client({ connectionString: DB_URL });
  await db.connect();
  try {
    const { rows } = await db.query<{ status: string; n: number; message: string | null }>(
      `SELECT status, count(*)::int AS n, min(message) AS message FROM "${server.info.schema}".print_jobs WHERE printer LIKE $1 GROUP BY status`, [`${prefix}%`]);
    const failed = rows.find((r) => r.status === 'error');
    if (failed) throw new Error(`${failed.n} job(s) of ${prefix}… ended in error: ${failed.message}`);
    return rows.find((r) => r.status === 'processed')?.n ?? 0;
  } finally {
    await db.end();
  }
}

// ---------------------------------------------------------------- the run

const LOAD_BEFORE = os.loadavg();
const sinks: Sinks = await startSinks(PRINTERS);
let received = 0;
const compiled = args.server === 'compiled' ? await compileServers() : undefined;
const countFile = path.join(os.tmpdir(), `wcr-bench-cups-sql-${process.pid}.json`);
const server = await spawnServer('bench/server.ts', ['--log-level', 'warn', ...(args['count-sql'] ? ['--count-sql', countFile] : [])], [], { compiledDir: compiled?.dir, timeoutMs: 120_000 });

/** With --count-sql: what the server counted since the last call (SIGUSR2 writes it and starts again), per job of `jobs`. */
async function serverCounts(jobs: number): Promise<Record<string, unknown> | undefined> {
  if (!args['count-sql']) return undefined;
  await rm(countFile, { force: true });
  server.child.kill('SIGUSR2');
  let text: string | undefined;
  for (let i = 0; i < 200 && !text; i++) {
    await new Promise((r) => setTimeout(r, 25));
    text = await readFile(countFile, 'utf8').catch(() => undefined);
  }
  if (!text) throw new Error('bench/server.ts wrote no --count-sql figures');
  const c = JSON.parse(text) as { counts: Record<string, number>; millis: Record<string, number>; sockets: { writes: Record<string, number> }; requests: { n: number; ms: number } };
  const per = (n: number) => Math.round((n / jobs) * 100) / 100;
  const total = Object.values(c.counts).reduce((a, b) => a + b, 0);
  return {
    statementsPerJob: per(total),
    topStatementsPerJob: Object.fromEntries(Object.entries(c.counts).slice(0, 10).map(([k, v]) => [k, { perJob: per(v), msEach: Math.round(((c.millis[k] ?? 0) / v) * 100) / 100 }])),
    socketWritesPerJob: Object.fromEntries(Object.entries(c.sockets.writes).map(([k, v]) => [k, per(v)])),
    requestMsMean: c.requests.n ? Math.round((c.requests.ms / c.requests.n) * 100) / 100 : NaN,
  };
}
// ippeveprinter needs DNS-SD: installed and started now (as the tests do), not found missing after the long part
if (args.ipp !== 'off') execFileSync('bash', ['-c', 'source scripts/lib/common.sh && ensure_ipp_printer'], { stdio: 'inherit', cwd: ROOT });
const cups = args.cups === 'off' ? undefined : await startCups(sinks.ports);
const floor = args.floor === 'off' ? undefined
  : await spawnServer('bench/durable-print-floor.ts', ['--sinks', sinks.ports.join(',')], [], { compiledDir: compiled?.dir, timeoutMs: 60_000 });
const floorPhases: Phase[] = [];
const agents: http.Agent[] = [];
const ipps: IppEvePrinter[] = [];
const project: Phase[] = [];
const cupsPhases: Phase[] = [];
let ipp: (Phase & { printers: number; toProcessedSeconds: number; secondsPerJobPerPrinter: number }) | undefined;
let base = 0;
let idleCores = NaN;
const monitor = new pg.Client({ connectionString: DB_URL });
await monitor.connect();
try {
  for (const [i, p] of sinks.ports.entries()) await addPrinter(server, `bench${i}`, `socket://127.0.0.1:${p}`);
  // the jobs' files for lp (the same bytes the project gets)
  const files = await mkdtemp(path.join(os.tmpdir(), 'wcr-bench-cups-jobs-'));
  const fileOf = (n: number) => path.join(files, `job-${n}`);
  // the server's CPU while idle (relay sweeps, reconciler, housekeeping), to read the phases' CPU per job net of it
  const idleMeter = await cpuMeter({ server, db: monitor });
  await new Promise((r) => setTimeout(r, 10_000));
  idleCores = (await idleMeter.stop()).system / 10;
  // warm-up, not timed: the server's first requests and statements (compilation, plans), cupsd's first jobs
  const warm = Math.min(40, JOBS);
  const warmAgent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  agents.push(warmAgent);
  await withClients(warm, 4, submitter(server, warmAgent, (n) => `bench${n % PRINTERS}`, base));
  received += warm;
  base += warm;
  if (cups) {
    for (let i = 0; i < warm; i++) await writeFile(fileOf(base + i), payload(base + i));
    const from = base;
    await withClients(warm, 4, (i) => run('lp', ['-d', cups.queues[(from + i) % PRINTERS]!, fileOf(from + i)], cups.env));
    received += warm;
    base += warm;
  }
  await waitReceived(sinks, received);
  for (const c of CLIENTS) {
    if (cups) {
      for (let i = 0; i < JOBS; i++) await writeFile(fileOf(base + i), payload(base + i));
      const from = base;
      const target = received + JOBS;
      cupsPhases.push(await phase(c, JOBS, (i) => run('lp', ['-d', cups.queues[(from + i) % PRINTERS]!, '-t', `job-${from + i}`, fileOf(from + i)], cups.env), () => waitReceived(sinks, target), () => cpuMeter({ cupsd: cups.pid })));
      received = target;
      base += JOBS;
      console.log(`CUPS, ${c} submitters: ${fmt(cupsPhases.at(-1)!.perSecond)} jobs/s`);
    }
    if (floor) {
      const floorAgent = new http.Agent({ keepAlive: true, maxSockets: c });
      agents.push(floorAgent);
      const from = base;
      const target = received + JOBS;
      floorPhases.push(await phase(c, JOBS, async (i) => {
        const n = from + i;
        const status = await post(floorAgent, new URL(`/jobs?printer=${n % PRINTERS}`, floor.info.url), '', payload(n), 'application/octet-stream');
        if (status !== 201) throw new Error(`durable floor POST /jobs answered ${status}`);
      }, () => waitReceived(sinks, target), () => cpuMeter({ server: floor, db: monitor })));
      received = target;
      base += JOBS;
      console.log(`durable floor, ${c} clients: ${fmt(floorPhases.at(-1)!.perSecond)} jobs/s`);
    }
    const agent = new http.Agent({ keepAlive: true, maxSockets: c });
    agents.push(agent);
    const target = received + JOBS;
    await serverCounts(1);
    project.push(await phase(c, JOBS, submitter(server, agent, (n) => `bench${n % PRINTERS}`, base), () => waitReceived(sinks, target), () => cpuMeter({ server, db: monitor })));
    received = target;
    base += JOBS;
    const counted = await serverCounts(JOBS);
    if (counted) Object.assign(project.at(-1)!, { server: counted });
    console.log(`project, ${c} clients: ${fmt(project.at(-1)!.perSecond)} jobs/s${counted ? ` ${JSON.stringify(counted)}` : ''}`);
  }
  await rm(files, { recursive: true, force: true });

  if (args.ipp !== 'off') {
    for (let i = 0; i < IPP_PRINTERS; i++) {
      const p = await IppEvePrinter.start();
      ipps.push(p);
      await addPrinter(server, `ipp${i}`, p.connection);
    }
    const spooled = async () => (await Promise.all(ipps.map((p) => readdir(p.spool)))).reduce((n, names) => n + names.filter((x) => /^\d+-/.test(x) && !x.endsWith('.prn') && !x.endsWith('.env')).length, 0);
    const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS[0] });
    agents.push(agent);
    const t0 = performance.now();
    const r = await phase(CLIENTS[0]!, IPP_JOBS, submitter(server, agent, (n) => `ipp${n % IPP_PRINTERS}`, base, 'text/plain'), async () => {
      // ippeveprinter takes text/plain, not application/octet-stream; a job it refuses ends the wait with an error
      for (let i = 0; (await spooled()) < IPP_JOBS; i++) {
        if (i % 25 === 24) await processedCount(server, 'ipp');
        await new Promise((res) => setTimeout(res, 20));
      }
    }, () => cpuMeter({ server, db: monitor }));
    // the printer has each document at once; the job is `processed` once followed to `completed`
    while ((await processedCount(server, 'ipp')) < IPP_JOBS) await new Promise((res) => setTimeout(res, 50));
    const toProcessedSeconds = (performance.now() - t0) / 1000;
    ipp = { ...r, printers: IPP_PRINTERS, toProcessedSeconds, secondsPerJobPerPrinter: (toProcessedSeconds * IPP_PRINTERS) / IPP_JOBS };
    base += IPP_JOBS;
  }
} finally {
  for (const a of agents) a.destroy();
  await monitor.end();
  await server.stop();
  await floor?.stop();
  await cups?.stop();
  for (const p of ipps) await p.close();
  sinks.close();
  compiled?.cleanup();
}

const rows = CLIENTS.map((c, i) => {
  const p = project[i]!;
  const k = cupsPhases[i];
  return [String(c), fmt(p.perSecond, 1), k ? fmt(k.perSecond, 1) : '–', k ? fmt(p.perSecond / k.perSecond, 2) : '–', fmt(p.submittedPerSecond, 0), `${fmt(p.p50, 1)} / ${fmt(p.p99, 1)}`,
    k ? `${fmt(k.p50, 1)} / ${fmt(k.p99, 1)}` : '–', fmt(p.cpuMsPerJob, 2), k ? `${fmt(k.cpuMsPerJob, 2)} (+ lp ${fmt(k.clientCpuMsPerJob, 2)})` : '–'];
});
console.log(`${JOBS} jobs of ${BYTES} bytes to ${PRINTERS} raw-socket printers (TCP sinks), first submission to last byte received`);
printTable(['submitters', 'project jobs/s', 'CUPS jobs/s', 'project / CUPS', 'project submissions/s', 'project request ms p50 / p99', 'CUPS lp ms p50 / p99', 'project CPU ms/job (server + PG)', 'CUPS CPU ms/job (cupsd + backends)'], rows);
if (ipp) {
  console.log(`ippeveprinter (project only): ${IPP_JOBS} jobs to ${IPP_PRINTERS} printers, ${CLIENTS[0]} clients: ${fmt(ipp.perSecond, 1)} jobs/s to the last document spooled, `
    + `${fmt(IPP_JOBS / ipp.toProcessedSeconds, 1)} jobs/s to the last processed; ${fmt(ipp.secondsPerJobPerPrinter * 1000, 0)} ms per job per printer`);
}
if (floorPhases.length) {
  console.log(`durable floor (HTTP, one committed row, at most once to the same sinks): ${floorPhases.map((f, i) => `${f.clients} clients ${fmt(f.perSecond, 1)} jobs/s `
    + `(project / floor ${fmt(project[i]!.perSecond / f.perSecond, 2)}; request p50 / p99 ${fmt(f.p50, 1)} / ${fmt(f.p99, 1)} ms; CPU ${fmt(f.cpuMsPerJob, 2)} ms/job)`).join('; ')}`);
  if (cupsPhases.length) console.log(`durable floor / CUPS: ${floorPhases.map((f, i) => `${f.clients} clients ${fmt(f.perSecond / cupsPhases[i]!.perSecond, 2)}`).join('; ')} (the most any durable server reaches against CUPS on this machine)`);
}
console.log(`server + PostgreSQL CPU while idle: ${fmt(idleCores, 3)} cores; project CPU ms/job net of it: ${project.map((p) => fmt(p.cpuMsPerJob - (idleCores * p.seconds * 1000) / p.jobs, 2)).join(', ')}`);
console.log(`load average before / after: ${LOAD_BEFORE.map((l) => fmt(l, 1)).join(' ')} / ${os.loadavg().map((l) => fmt(l, 1)).join(' ')}`);
const figures = { bench: 'print-cups', loadBefore: LOAD_BEFORE, loadAfter: os.loadavg(), jobs: JOBS, printers: PRINTERS, bytes: BYTES, idleCores, project, cups: cupsPhases, floor: floorPhases, ipp };
console.log(JSON.stringify(figures));

const at = (c: number) => CLIENTS.indexOf(c);
const targets: TargetResult[] = [];
if (cupsPhases.length && at(4) >= 0) {
  const value = project[at(4)]!.perSecond / cupsPhases[at(4)]!.perSecond;
  targets.push({ name: 'project / CUPS at 4 submitters (jobs/s)', value, target: '>= 10', met: value >= 10 });
}
if (at(4) >= 0 && at(16) >= 0) {
  const value = project[at(16)]!.perSecond / project[at(4)]!.perSecond;
  targets.push({ name: 'project 16 clients / 4 clients (jobs/s grows with clients)', value, target: '>= 1.5', met: value >= 1.5 });
}
for (const t of targets) console.log(`${t.name}: ${fmt(t.value, 2)} (target ${t.target}: ${t.met ? 'met' : 'NOT MET'})`);
writeResult('print-cups', args, {
  figures,
  floors: {
    ...Object.fromEntries(cupsPhases.map((k) => [`CUPS ${k.clients} submitters jobs/s`, k.perSecond])),
    ...Object.fromEntries(floorPhases.map((f) => [`durable floor ${f.clients} clients jobs/s`, f.perSecond])),
  },
  ratios: {
    ...Object.fromEntries(floorPhases.map((f, i) => [`project / durable floor, ${f.clients} clients`, project[i]!.perSecond / f.perSecond])),
    ...Object.fromEntries(floorPhases.map((f, i) => (cupsPhases[i] ? [`durable floor / CUPS, ${f.clients} submitters`, f.perSecond / cupsPhases[i]!.perSecond] : undefined)).filter((e): e is [string, number] => e !== undefined)),
    ...Object.fromEntries(cupsPhases.map((k, i) => [`project / CUPS, ${k.clients} submitters`, project[i]!.perSecond / k.perSecond])),
    ...(at(4) >= 0 && at(16) >= 0 ? { 'project 16 / 4 clients': project[at(16)]!.perSecond / project[at(4)]!.perSecond } : {}),
  },
  targets,
});
process.exit(0);
