import { Readable } from 'node:stream';

/** Bytes gathered before a piece of the array is handed on: fewer, larger writes. */
const PIECE = 64 * 1024;

/**
 * A JSON array written as its elements arrive (the answer of a search whose
 * elements are read from the database a group at a time). `Readable.from`
 * asks for the next element only when the response wants more bytes, so a
 * slow client holds the reads back instead of piling bodies up in memory.
 *
 * An error after the first byte cannot become an error body: the status and
 * headers are gone. `onError` is told (the log), and the stream fails, so
 * Koa's pipeline destroys the response: the client gets no final chunk of
 * the chunked encoding and an array that does not parse, never one that
 * looks complete. Callers read what can fail before the body (the first
 * page), so such errors answer with a normal error body.
 */
export function jsonArrayStream(elements: AsyncIterable<unknown>, onError: (err: unknown) => void): Readable {
  async function* pieces(): AsyncGenerator<string> {
    let piece = '[';
    let first = true;
    try {
      for await (const element of elements) {
        piece += (first ? '' : ',') + JSON.stringify(element);
        first = false;
        if (piece.length >= PIECE) {
          yield piece;
          piece = '';
        }
      }
    } catch (err) {
      onError(err);
      throw err;
    }
    yield `${piece}]`;
  }
  return Readable.from(pieces(), { objectMode: false });
}
