import type { Readable } from 'node:stream';
import yazl from 'yazl';
import type { BlobStore } from '../../../blobs/blob-store.js';

/** What goes into a job's support ZIP. */
export interface CollectInput {
  /** The job as the API presents it (written as `job.json`). */
  record: Record<string, unknown>;
  /** The job's log as text (written as `log.txt`). */
  log: string;
  /** The submitted document: its bytes when stored with the job (job-document.ts), else its blob. */
  document: { sha256: string; name: string; bytes?: Buffer | undefined };
  /** Intermediate files still kept (`stages/<stage>.<ext>`). */
  stages: readonly { stage: string; sha256: string; mimeType: string }[];
}

/** A name safe inside a ZIP: no directories, no control characters, never empty. */
export function zipEntryName(name: string): string {
  // eslint-disable-next-line no-control-regex -- control characters must not reach an archive entry
  const safe = name.normalize('NFC').replace(/[\u0000-\u001f\u007f/\\:]/g, '_').replace(/^\.+/, '_').slice(0, 200).trim();
  return safe || 'document';
}

const EXT: Record<string, string> = { 'application/pdf': 'pdf', 'application/postscript': 'ps', 'image/png': 'png', 'image/jpeg': 'jpg', 'text/plain': 'txt' };

/**
 * `GET /v3/jobs/{id}/collect`: a ZIP of the job's files, its record and its
 * log, made with yazl and returned as a stream to pipe into the response. Blob
 * files are read as the archive is consumed (yazl pulls one entry at a time),
 * so nothing is held whole; a blob missing on disk is left out with a note.
 * yazl rather than archiver: no dependencies beyond a CRC, a plain
 * stream-in/stream-out API, and ZIP64 for documents past 4 GiB.
 */
export async function collectJobZip(blobs: BlobStore, input: CollectInput): Promise<Readable> {
  const zip = new yazl.ZipFile();
  const mtime = new Date();
  const missing: string[] = [];
  zip.addBuffer(Buffer.from(JSON.stringify(input.record, null, 2)), 'job.json', { mtime });
  zip.addBuffer(Buffer.from(input.log), 'log.txt', { mtime });
  const addBlob = async (sha256: string, name: string) => {
    const stream = await blobs.open(sha256);
    if (!stream) return missing.push(name);
    // already-compressed formats are stored, not deflated again
    zip.addReadStream(stream, name, { mtime, compress: !/\.(pdf|png|jpg|zip)$/i.test(name) });
    return undefined;
  };
  const documentName = `document/${zipEntryName(input.document.name)}`;
  if (input.document.bytes) zip.addBuffer(input.document.bytes, documentName, { mtime, compress: !/\.(pdf|png|jpg|zip)$/i.test(documentName) });
  else await addBlob(input.document.sha256, documentName);
  for (const st of input.stages) await addBlob(st.sha256, `stages/${zipEntryName(st.stage)}.${EXT[st.mimeType] ?? 'bin'}`);
  if (missing.length > 0) zip.addBuffer(Buffer.from(`not on disk any more:\n${missing.join('\n')}\n`), 'MISSING.txt', { mtime });
  zip.end();
  // yazl's output is a PassThrough (typed as the older NodeJS.ReadableStream)
  return zip.outputStream as unknown as Readable;
}
