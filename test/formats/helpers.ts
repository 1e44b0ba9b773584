import { Readable } from 'node:stream';
import { AppError } from '../../src/errors/app-error.js';
import { LIST_FORMATS, type ListFormat, type ListItem, type ListSource, type Metadata, collectList, parseList } from '../../src/formats/index.js';

export const format = (name: ListFormat['name']) => LIST_FORMATS.find((f) => f.name === name)!;

/** A stream of the text in small chunks of varying size, so tokens and UTF-8 sequences straddle chunk boundaries. */
export function chunked(text: string | Buffer, seed = 1): Readable {
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text, 'utf8');
  const parts: Buffer[] = [];
  let s = seed;
  for (let i = 0; i < bytes.length;) {
    s = (s * 1103515245 + 12345) % 2147483648;
    const n = 1 + (s % 9);
    parts.push(bytes.subarray(i, i + n));
    i += n;
  }
  return Readable.from(parts);
}

export async function parseText(name: ListFormat['name'], text: string | Buffer, limits = {}) {
  const list = await collectList(parseList(format(name), chunked(text), limits));
  return { ...list, items: list.items.map(({ href, metadata }) => ({ href, metadata })) };
}

/** The AppError a parse fails with (the test fails when it does not). */
export async function parseError(name: ListFormat['name'], text: string | Buffer, limits = {}): Promise<AppError> {
  try {
    await parseText(name, text, limits);
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('the parse did not fail');
}

export const source = (name: string | undefined, metadata: Metadata, items: ListItem[]): ListSource => ({
  ...(name !== undefined ? { name } : {}),
  metadata,
  async *items() {
    yield* items;
  },
});
