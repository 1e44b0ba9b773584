/** Anything `for await` reads chunks of bytes or text from: a Node.js Readable, a web ReadableStream, an async generator. */
export type ByteSource = AsyncIterable<Uint8Array | string>;

/** Every byte of a stream (string chunks as UTF-8). */
export async function readBytes(stream: ByteSource): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(typeof c === 'string' ? Buffer.from(c, 'utf8') : Buffer.from(c));
  return Buffer.concat(parts);
}

/** A stream's whole content as UTF-8 text; no stream (`undefined`, as `openContent` answers for no content) gives `undefined`. */
export async function readAll(stream: ByteSource): Promise<string>;
export async function readAll(stream: ByteSource | undefined): Promise<string | undefined>;
export async function readAll(stream: ByteSource | undefined): Promise<string | undefined> {
  return stream === undefined ? undefined : (await readBytes(stream)).toString('utf8');
}
