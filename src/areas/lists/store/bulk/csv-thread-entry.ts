import { Readable } from 'node:stream';
import { parentPort } from 'node:worker_threads';
import { AppError } from '../../../../errors/app-error.js';
import { parseCsv } from '../../../../formats/csv.js';
import { batchesOf } from '../../../../formats/list-document.js';
import { checkHref, docRef } from '../doc-href.js';
import { CopyRows } from './copy-rows.js';
import { PAYLOAD_CREDITS, type FromThread, type OpenSession, type ToThread } from './csv-thread.js';

/**
 * The CSV import thread (csv-thread.ts starts it): each session is one
 * import. Its body arrives in chunks, is parsed by `parseCsv` as on the main
 * thread, and its rows are encoded by `CopyRows` into binary COPY payloads,
 * transferred back. Both ways are bounded: a chunk is acknowledged
 * (`taken`) only once the parser's input has room, and at most
 * `PAYLOAD_CREDITS` payloads wait for their COPY.
 */

const port = parentPort!;
const post = (msg: FromThread, transfer?: ArrayBuffer[]) => port.postMessage(msg, transfer);

interface Session {
  source: Readable;
  /** Chunks pushed over the source's high-water mark, acknowledged when it asks for more. */
  owed: number;
  credits: number;
  closed: boolean;
  wake: (() => void) | undefined;
}

const sessions = new Map<number, Session>();

/** The main thread closed the session (its import ended otherwise): nothing more is posted. */
class Closed extends Error {}

port.on('message', (msg: ToThread) => {
  if (msg.t === 'open') {
    void run(msg);
    return;
  }
  const s = sessions.get(msg.id);
  if (!s) return;
  if (msg.t === 'chunk') {
    if (s.source.push(Buffer.from(msg.data))) post({ t: 'taken', id: msg.id });
    else s.owed++;
  } else if (msg.t === 'end') {
    s.source.push(null);
  } else if (msg.t === 'credit') {
    s.credits++;
    s.wake?.();
  } else {
    // the parser fails on the source's error, so the session's loop ends
    s.closed = true;
    s.source.destroy(new Closed());
    s.wake?.();
  }
});

async function run(open: OpenSession): Promise<void> {
  const { id } = open;
  const s: Session = {
    owed: 0,
    credits: PAYLOAD_CREDITS,
    closed: false,
    wake: undefined,
    source: new Readable({
      read() {
        for (; s.owed > 0; s.owed--) post({ t: 'taken', id });
      },
    }),
  };
  sessions.set(id, s);
  const rows = new CopyRows(open.lid);
  // a payload goes when the main thread has room for it; its buffer is transferred, never written again here
  const ship = async () => {
    while (s.credits === 0 && !s.closed) await new Promise<void>((resolve) => (s.wake = resolve));
    s.wake = undefined;
    if (s.closed) throw new Closed();
    s.credits--;
    const n = rows.rows;
    const data = rows.take();
    post({ t: 'copy', id, data: data.buffer as ArrayBuffer, offset: data.byteOffset, length: data.length, rows: n }, [data.buffer as ArrayBuffer]);
  };
  try {
    const parsed = parseCsv(s.source, open.limits);
    let count = 0;
    for await (const batch of batchesOf(parsed.items)) {
      for (let i = 0; i < batch.length; i++) {
        const item = batch[i]!;
        const doc = open.checkHrefs ? checkHref(item.href, item.at) : (docRef(item.href) ?? null);
        rows.add(open.base + count, item.href, doc, item.metadata);
        count++;
        if (rows.rows >= open.chunkRows) await ship();
      }
      if (s.closed) throw new Closed();
    }
    if (rows.rows > 0) await ship();
    post({ t: 'done', id, header: parsed.header(), count });
  } catch (err) {
    if (!s.closed) {
      post({ t: 'fail', id, error: err instanceof AppError ? { code: err.code, message: err.message, details: err.details } : { message: err instanceof Error ? err.message : String(err) } });
    }
  } finally {
    sessions.delete(id);
    s.source.destroy();
  }
}
