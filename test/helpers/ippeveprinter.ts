import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface IppEvePrinterOptions {
  /** Document formats it accepts (`-f`); application/octet-stream is always added by ippeveprinter. */
  formats?: readonly string[];
  /** How long "printing" a job takes (the `-c` command sleeps), in seconds; 0 by default. */
  printSeconds?: number;
}

/** A free TCP port on 127.0.0.1 (taken and released; ippeveprinter takes it next). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const connects = (port: number) => new Promise<boolean>((resolve) => {
  const s = net.connect({ host: '127.0.0.1', port });
  s.once('connect', () => {
    s.destroy();
    resolve(true);
  });
  s.once('error', () => resolve(false));
});

const HOW_TO = 'ippeveprinter comes with the Debian package cups-ipp-utils and needs DNS-SD (dbus-daemon --system and avahi-daemon running); '
  + 'scripts/lib/common.sh (ensure_ipp_printer, run by .ci/run and scripts/test) installs and starts them';

/**
 * A real IPP Everywhere printer for tests: CUPS's `ippeveprinter`, on
 * loopback only (`-n localhost`: it listens on 127.0.0.1 and ::1) at a free
 * port, DNS-SD advertisement off, keeping every document it receives in its
 * spool directory (`-k -d`). "Printing" runs a command that sleeps
 * `printSeconds`; while it runs, the printer answers new jobs with
 * `server-error-busy`. `stop` and `start` switch it off and on again on the
 * same port. When it cannot be started the error says why and how to fix it:
 * tests never skip it silently.
 */
export class IppEvePrinter {
  private child?: ChildProcess;
  private stderr = '';

  private constructor(readonly dir: string, readonly port: number, private readonly opts: IppEvePrinterOptions) {}

  static async start(opts: IppEvePrinterOptions = {}): Promise<IppEvePrinter> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'wcr-ippeve-'));
    await mkdir(path.join(dir, 'spool'));
    const script = path.join(dir, 'print.sh');
    // the job's IPP attributes as ippeveprinter hands them to the command (IPP_COPIES, CONTENT_TYPE, ...), beside the document
    await writeFile(script, `#!/bin/sh\nenv | grep -E '^(IPP_|CONTENT_TYPE=)' > "$1.env"\nsleep ${opts.printSeconds ?? 0}\nexit 0\n`);
    await chmod(script, 0o755);
    const printer = new IppEvePrinter(dir, await freePort(), opts);
    try {
      await printer.up();
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
    return printer;
  }

  get connection(): string {
    return `ipp://127.0.0.1:${this.port}/ipp/print`;
  }

  get spool(): string {
    return path.join(this.dir, 'spool');
  }

  /** Starts the printer (again, on the same port and spool). */
  async up(): Promise<void> {
    const formats = (this.opts.formats ?? ['application/pdf', 'image/pwg-raster', 'text/plain']).join(',');
    const child = spawn('ippeveprinter', [
      '-r', 'off', '-n', 'localhost', '-p', String(this.port), '-f', formats, '-k', '-d', this.spool,
      '-c', path.join(this.dir, 'print.sh'), `wcr-test-${this.port}`,
    ], { cwd: this.dir, stdio: ['ignore', 'ignore', 'pipe'] });
    this.child = child;
    this.stderr = '';
    child.stderr.on('data', (c: Buffer) => (this.stderr = (this.stderr + c.toString()).slice(-4000)));
    let exited: string | undefined;
    child.once('error', (err) => (exited = `cannot run ippeveprinter (${(err as NodeJS.ErrnoException).code ?? err.message})`));
    child.once('exit', (code, sig) => (exited ??= `ippeveprinter exited (${code ?? sig})`));
    const deadline = Date.now() + 15_000;
    while (!(await connects(this.port))) {
      if (exited) throw new Error(`${exited}: ${this.stderr.trim() || 'no output'}. ${HOW_TO}`);
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`ippeveprinter did not listen on 127.0.0.1:${this.port} within 15 s: ${this.stderr.trim() || 'no output'}. ${HOW_TO}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Switches the printer off (SIGTERM, then gone): connections are refused. */
  async down(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
    await gone;
    clearTimeout(timer);
  }

  /** The documents in the spool (one file per job, `<job-id>-<job-name>.<ext>`), in job order. */
  async documents(): Promise<{ name: string; bytes: Buffer }[]> {
    // the -c command's output (.prn) is not a received document
    const names = (await readdir(this.spool).catch(() => [] as string[])).filter((n) => /^\d+-/.test(n) && !n.endsWith('.prn') && !n.endsWith('.env'));
    names.sort((a, b) => parseInt(a, 10) - parseInt(b, 10));
    return Promise.all(names.map(async (name) => ({ name, bytes: await readFile(path.join(this.spool, name)) })));
  }

  /** The environment the print command saw for a spooled document (its IPP job attributes), by variable. */
  async attributesOf(document: string): Promise<Map<string, string>> {
    const text = await readFile(path.join(this.spool, `${document}.env`), 'utf8');
    return new Map(text.split('\n').filter(Boolean).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  }

  async close(): Promise<void> {
    await this.down();
    await rm(this.dir, { recursive: true, force: true });
  }
}
