import { Readable } from 'node:stream';

/** Bytes gathered before a piece of the array is handed on: fewer, larger writes. */
const PIECE = 64 * 1024;

/**
 * A JSON array answer written as its elements arrive (a search whose
 * elements are read from the database a group at a time). `Readable.from`
 * asks for more only when the response wants more bytes, so a slow client
 * holds the reads back instead of piling bodies up in memory.
 *
 * The first element is read before this resolves: an error up to there is
 * thrown to the caller and answered with a normal error body. The status and
 * headers go out with the first element. An error after that cannot become
 * an error body: `onError` is told (the log) and the stream fails, so Koa's
 * pipeline destroys the response. The client gets no final chunk of the
 * chunked encoding and an array that does not parse, never one that looks
 * complete.
 */
export async function jsonArrayBody(elements: AsyncIterable<unknown>, onError: (err: unknown) => void): Promise<Readable> {
  const it = elements[Symbol.asyncIterator]();
  const first = await it.next();
  const rest: AsyncIterable<unknown> = { [Symbol.asyncIterator]: () => it };
  async function* pieces(): AsyncGenerator<string> {
    if (first.done) {
      yield '[]';
      return;
    }
    yield `[${JSON.stringify(first.value)}`;
    let piece = '';
    try {
      for await (const element of rest) {
        piece += `,${JSON.stringify(element)}`;
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
