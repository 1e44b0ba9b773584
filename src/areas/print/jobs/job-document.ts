import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { BlobStore } from '../../../blobs/blob-store.js';
import type { Sql } from '../../../storage/driver/database.js';
import { inlineDocument } from './store/job-reads.js';
import type { PrintJobRow } from './store/job-row.js';

/**
 * Where a print job's submitted document lives. Up to `INLINE_DOCUMENT_MAX`
 * bytes it is stored with the job (`print_documents`, migration 016), in the
 * statement that inserts the job: that commit makes it durable, shared with
 * the other submissions' commits, with no file, file fsync or directory fsync
 * of its own. Larger documents stream into the blob store (never held in
 * memory), which syncs file and directory before the job is inserted. Either
 * way a 2xx answer means the bytes survive a crash.
 *
 * 64 KiB: a print job's data is often a few KiB (labels, receipts, PCL or
 * ZPL text); at this size holding 20–40 concurrent submissions in memory
 * costs a few MiB, and PostgreSQL keeps such a value in its own table (in
 * the row up to about 8 KB, in TOAST beyond), away from the job row and its
 * indexes.
 */
export const INLINE_DOCUMENT_MAX = 64 * 1024;

/** A submitted document read as far as needed: whole when it ends within `max` bytes, else all of it as a stream (what was read, then the rest). */
export type SubmittedDocument = { bytes: Buffer; sha256: string } | { stream: Readable };

export async function readSubmittedDocument(source: Readable, max: number): Promise<SubmittedDocument> {
  const it = source[Symbol.asyncIterator]() as AsyncIterator<Buffer | string>;
  const chunks: Buffer[] = [];
  let size = 0;
  for (;;) {
    const r = await it.next();
    if (r.done) {
      const bytes = Buffer.concat(chunks, size);
      return { bytes, sha256: createHash('sha256').update(bytes).digest('hex') };
    }
    const chunk = typeof r.value === 'string' ? Buffer.from(r.value) : r.value;
    chunks.push(chunk);
    size += chunk.length;
    if (size > max) break;
  }
  // too large to keep with the job: the chunks read so far, then the rest of the source, streamed; when the
  // consumer stops early (413, a failed write) the source is destroyed, as a pipeline from it would
  return {
    stream: Readable.from((async function* rest() {
      let ended = false;
      try {
        yield* chunks;
        for (;;) {
          const r = await it.next();
          if (r.done) {
            ended = true;
            return;
          }
          yield r.value;
        }
      } finally {
        if (!ended) await it.return?.();
      }
    })(), { objectMode: false }),
  };
}

/**
 * The job's submitted document as a stream for a delivery: its inline bytes, else its blob (a missing blob errors
 * the stream, ENOENT). `known`: the inline document as the hand-off statement read it (null: none); undefined: look.
 */
export async function openJobDocument(sql: Sql, blobs: BlobStore, job: Pick<PrintJobRow, 'id' | 'blob_sha256' | 'size'>, known?: Buffer | null): Promise<Readable> {
  const bytes = known === undefined ? await inlineDocument(sql, job.id) : known;
  return bytes ? Readable.from([bytes], { objectMode: false }) : blobs.reader(job.blob_sha256, Number(job.size));
}

/** The job's submitted document as bytes when small (stored with the job), else the blob file's path. */
export async function jobDocumentSource(sql: Sql, blobs: BlobStore, job: Pick<PrintJobRow, 'id' | 'blob_sha256'>): Promise<Buffer | string> {
  return (await inlineDocument(sql, job.id)) ?? blobs.pathOf(job.blob_sha256);
}

/** The job's submitted document as a file: the blob's path, or its inline bytes written to `dir` (a flow's working directory). */
export async function jobDocumentFile(sql: Sql, blobs: BlobStore, job: Pick<PrintJobRow, 'id' | 'blob_sha256'>, dir: string): Promise<string> {
  const source = await jobDocumentSource(sql, blobs, job);
  if (typeof source === 'string') return source;
  const file = path.join(dir, 'document');
  await writeFile(file, source, { flag: 'wx' });
  return file;
}
