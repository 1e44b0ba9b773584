import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AppError } from '../../errors/app-error.js';
import { safeFetch } from '../../net/safe-fetch.js';
import type { IntakeClaim } from '../ports.js';
import { completeClaim, failClaim, formatOf, ImportRefused, notifyFailure, reasonOf, settleGone, type ImportContext } from './import-file.js';

/** What the service's state remembers of a URL's last answer (`url/<url>`). */
interface LastAnswer {
  sha256: string;
  outcome: 'imported' | 'repeat' | 'failed';
  at: string;
}

/** How a URL source fetches. */
export interface UrlFetchOptions {
  /** `commands.importAllowPrivate`: loopback and private addresses allowed. */
  allowPrivate: boolean;
  timeoutMs: number;
  maxBytes: number;
}

/** The answer was larger than `fetch.maxBytes`. */
const tooLarge = (max: number) => new ImportRefused('IMPORT_TOO_LARGE', `the answer is larger than fetch.maxBytes (${max} bytes)`);

/**
 * One URL source of a csv service. A run fetches the URL through the
 * `import` command's address guard (no loopback or private address unless
 * `commands.importAllowPrivate`), with a timeout and a size limit, into a
 * spool file while hashing it. An answer whose hash is the last one seen
 * imports nothing; a content imported before under this URL is a repeat;
 * anything else is claimed (source: the URL, name: its last path segment)
 * and becomes a task. A malformed answer creates nothing: the claim records
 * the reason (no error/ directory for a URL), the log and /metrics say so.
 */
export class UrlSource {
  private readonly url: URL;
  private readonly name: string;

  constructor(private readonly c: ImportContext, private readonly spoolDir: string, private readonly o: UrlFetchOptions) {
    this.url = new URL(c.source.url!);
    const last = this.url.pathname.split('/').filter(Boolean).pop();
    this.name = last ? safeDecode(last) : this.url.hostname;
  }

  /** Unfinished claims a crash left: the spool file is gone, so each is settled (a task that exists kept, else removed) and the next fetch decides. */
  async resume(): Promise<void> {
    for (const claim of await this.c.ports.claims.unfinished(this.c.key)) await settleGone(this.c, claim);
  }

  async run(signal: AbortSignal): Promise<void> {
    const { c } = this;
    await mkdir(this.spoolDir, { recursive: true });
    const spool = path.join(this.spoolDir, `${randomUUID()}.part`);
    try {
      let fetched: { sha256: string; size: number; contentType?: string };
      try {
        fetched = await this.fetchTo(spool, signal);
      } catch (err) {
        if (err instanceof ImportRefused) return await this.failed(undefined, err, undefined);
        if (err instanceof AppError) {
          c.ports.log.warn({ url: c.key, code: err.code, reason: err.message }, 'csv import: the URL could not be fetched; the next run tries again');
          return;
        }
        throw err;
      }
      const stateKey = `url/${c.key}`;
      const last = (await c.ports.state.get(stateKey))?.value as LastAnswer | undefined;
      if (last?.sha256 === fetched.sha256) return; // an unchanged answer imports nothing
      const remember = (outcome: LastAnswer['outcome']) => c.ports.state.put(stateKey, { sha256: fetched.sha256, outcome, at: new Date().toISOString() } satisfies LastAnswer);
      if (await c.ports.claims.taken(c.key, this.name, fetched.sha256)) {
        c.ports.log.info({ url: c.key, sha256: fetched.sha256 }, 'csv import: a repeat (this URL gave this content before and it was imported); no new task');
        return await remember('repeat');
      }
      const format = formatOf(c.source, this.name, fetched.contentType);
      const facts = { source: c.key, name: this.name, size: fetched.size, mtimeMs: null, ino: null, sha256: fetched.sha256, docUuid: null };
      const first = await c.ports.claims.claim({ ...facts, tid: randomUUID() });
      let claim = first.claim;
      if (!first.fresh) {
        await settleGone(c, claim);
        ({ claim } = await c.ports.claims.claim({ ...facts, tid: randomUUID() }));
      }
      if (!format) {
        await this.failed(claim, new ImportRefused('UNKNOWN_FORMAT', 'neither the URL\'s name, its content type nor the source\'s `format` says whether it is CSV or RList'), fetched.sha256);
        return await remember('failed');
      }
      const result = await completeClaim(c, claim, format, () => createReadStream(spool), () => Promise.resolve(true));
      if (result.outcome === 'refused') {
        await this.failed(claim, result.err, fetched.sha256);
        return await remember('failed');
      }
      await c.ports.claims.finish(claim.id, 'done');
      await remember('imported');
      c.ports.log.info({ url: c.key, size: fetched.size, sha256: fetched.sha256, service: c.source.task.service, tid: claim.tid }, 'csv import: URL imported');
    } finally {
      await rm(spool, { force: true });
    }
  }

  /** Streams the answer into `spool`, hashing it; refuses more than `maxBytes`. */
  private async fetchTo(spool: string, signal: AbortSignal): Promise<{ sha256: string; size: number; contentType?: string }> {
    const { maxBytes, allowPrivate, timeoutMs } = this.o;
    const res = await safeFetch(this.url, {
      allowPrivate, timeoutMs,
      onError: (err, where) => this.c.ports.log.debug({ err, url: where }, 'csv import: fetch failed'),
    });
    if (res.contentLength !== undefined && res.contentLength > maxBytes) {
      res.body.destroy();
      throw tooLarge(maxBytes);
    }
    const hash = createHash('sha256');
    let size = 0;
    const count = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (size > maxBytes) return done(tooLarge(maxBytes));
        hash.update(chunk);
        done(null, chunk);
      },
    });
    await pipeline(res.body, count, createWriteStream(spool), { signal });
    return { sha256: hash.digest('hex'), size, ...(res.contentType ? { contentType: res.contentType } : {}) };
  }

  private async failed(claim: IntakeClaim | undefined, err: ImportRefused, sha256: string | undefined): Promise<void> {
    const reason = reasonOf(err);
    if (claim) await failClaim(this.c, claim, reason);
    else await notifyFailure(this.c, this.c.key, reason);
    this.c.ports.metrics.failed(err.code);
    this.c.ports.log.warn({ url: this.c.key, code: err.code, reason: err.message, ...err.where, sha256 }, 'csv import: URL failed');
  }
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
