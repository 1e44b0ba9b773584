import { Readable } from 'node:stream';
import getRawBody from 'raw-body';
import { z } from 'zod';
import { validate } from '../api/validate.js';
import { AppError } from '../errors/app-error.js';
import { listTooLarge } from './format-errors.js';
import { type ListLimits, type ListSource, type Metadata, type ParsedList, type ParsedListItem, headerNotReady } from './list-document.js';
import { flatten } from './metadata-paths.js';
import { checkJsonNumbers, checkValue } from './json-rules.js';

/**
 * JSON lists: the list create body of DESIGN.md section 6,
 * `{ name, metadata, embedded: { listItems: [ { href, metadata } ] } }`. JSON
 * keeps every metadata type. The body is read whole (up to `maxJsonBytes`);
 * the list and its items are checked before the first item is handed out.
 */

const isObject = (v: unknown): v is Metadata => typeof v === 'object' && v !== null && !Array.isArray(v);
// kept as parsed (z.record would copy keys into a fresh object, where "__proto__" is not a plain key)
const metadata = z.custom<Metadata>(isObject, 'must be an object');
const body = z.object({
  name: z.string().optional(),
  metadata: metadata.optional(),
  embedded: z.object({
    listItems: z.array(z.object({ href: z.string().min(1), metadata: metadata.optional() })).optional(),
  }).optional(),
});

export function parseJson(source: Readable, limits: ListLimits): ParsedList {
  let header: { name?: string; metadata: Metadata } | undefined;

  async function* items(): AsyncGenerator<ParsedListItem> {
    let raw: string;
    try {
      raw = await getRawBody(source, { limit: limits.maxJsonBytes, encoding: 'utf8' });
    } catch (err) {
      if ((err as { type?: string }).type === 'entity.too.large') throw new AppError('PAYLOAD_TOO_LARGE', `the list is larger than ${limits.maxJsonBytes} bytes`);
      throw err;
    }
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (err) {
      throw new AppError('INVALID_JSON', `the body is not valid JSON: ${(err as Error).message}`);
    }
    // as every JSON body (json-rules.ts), before anything walks it recursively (zod, flatten, JSON.stringify):
    // a hostile nesting would overflow the stack; a `__proto__` key would be dropped by any copy; NUL cannot be stored
    checkValue(value);
    checkJsonNumbers(raw);
    const list = validate(body, value);
    const listItems = list.embedded?.listItems ?? [];
    if (listItems.length > limits.maxItems) throw listTooLarge(limits.maxItems);
    const tooMany = (meta: Metadata | undefined, path: string) => {
      let keys = 0;
      for (const _ of flatten(meta ?? {})) if (++keys > limits.maxKeys) {
        throw new AppError('VALIDATION_FAILED', `the body is invalid: ${path} has more than ${limits.maxKeys} keys`, {
          issues: [{ path, message: `more than ${limits.maxKeys} keys` }],
        });
      }
    };
    tooMany(list.metadata, 'body.metadata');
    listItems.forEach((item, i) => tooMany(item.metadata, `body.embedded.listItems.${i}.metadata`));
    header = { ...(list.name !== undefined ? { name: list.name } : {}), metadata: list.metadata ?? {} };
    for (const [index, item] of listItems.entries()) yield { href: item.href, metadata: item.metadata ?? {}, at: { index } };
  }

  return {
    items: items(),
    header: () => header ?? headerNotReady(),
  };
}

/** Writes a list as the JSON create body, one item at a time. */
export function writeJson(list: ListSource): Readable {
  async function* parts(): AsyncGenerator<string> {
    const name = list.name !== undefined ? `"name":${JSON.stringify(list.name)},` : '';
    yield `{${name}"metadata":${JSON.stringify(list.metadata)},"embedded":{"listItems":[`;
    let first = true;
    for await (const item of list.items()) {
      yield `${first ? '' : ','}${JSON.stringify({ href: item.href, metadata: item.metadata })}`;
      first = false;
    }
    yield ']}}';
  }
  return Readable.from(parts());
}
