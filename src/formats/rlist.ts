import { PassThrough, Readable } from 'node:stream';
import { invalidRlist, listTooLarge } from './format-errors.js';
import { type ListLimits, type ListSource, type ParsedList, type ParsedListItem, headerNotReady } from './list-document.js';
import { MetadataBuilder, flatten, joinPath, splitPath } from './metadata-paths.js';
import { type RlistToken, RlistLexer } from './rlist-lexer.js';

/**
 * RList ("repro list", `application/rli`): INI-like sections of `KEY="value"`
 * lines (docs/formats.md). `[PROGRAM]`, `[PROCESSING]`, `[JOBINFO]` and
 * `[SENDER]` hold list metadata under their own name (`PROGRAM.KEY`); `[LIST]`
 * holds the list's `NAME` and any other list metadata, so every list survives
 * export and import; `[DOCUMENT_<n>]`, in ascending `n`, is one item with
 * `HREF` (or `FILE`), `NAME` (item metadata `name`) and further keys as item
 * metadata. Reserved keys are recognised only unquoted, in any case.
 */

/** Sections whose keys become list metadata prefixed by the section name. */
const RLIST_METADATA_SECTIONS = ['PROGRAM', 'PROCESSING', 'JOBINFO', 'SENDER'] as const;
const METADATA_SECTIONS = new Set<string>(RLIST_METADATA_SECTIONS);
const DOCUMENT = /^DOCUMENT_(\d{1,9})$/;
const EOL = '\r\n';

type Section =
  | { kind: 'list'; name: string }
  | { kind: 'metadata'; name: string; prefix: string }
  | { kind: 'document'; name: string; n: number; line: number; href?: string; meta: MetadataBuilder };

/** Parses an RList as it streams in. The source is unpiped (not destroyed) when parsing stops. */
export function parseRlist(source: Readable, limits: ListLimits): ParsedList {
  let name: string | undefined;
  const list = new MetadataBuilder(limits.maxKeys);
  let done = false;

  async function* items(): AsyncGenerator<ParsedListItem> {
    // decoding in a pass-through of our own: its iterator may be destroyed on early exit, the caller's source may not
    const text = new PassThrough({ encoding: 'utf8' });
    const onSourceError = (err: Error) => text.destroy(err);
    source.on('error', onSourceError);
    source.pipe(text);
    const lexer = new RlistLexer(limits.maxRecordChars);
    let section: Section | null = null;
    let lastDocument = -1;
    let count = 0;

    const finish = (): ParsedListItem | undefined => {
      if (section?.kind !== 'document') return undefined;
      const { name: where, href, meta, line } = section;
      if (href === undefined) throw invalidRlist(`section [${where}] has no HREF or FILE`, { section: where, key: 'HREF', line });
      if (++count > limits.maxItems) throw listTooLarge(limits.maxItems);
      return { href, metadata: meta.root, at: { section: where } };
    };

    const open = (token: { name: string; line: number }): Section => {
      const upper = token.name.toUpperCase();
      const doc = DOCUMENT.exec(upper);
      if (doc) {
        const n = Number(doc[1]);
        if (n <= lastDocument) {
          const why = n === lastDocument ? 'appears twice' : 'comes after a higher-numbered DOCUMENT section (documents must be in ascending order)';
          throw invalidRlist(`section [${token.name}] ${why}`, { section: token.name, line: token.line });
        }
        lastDocument = n;
        return { kind: 'document', name: token.name, n, line: token.line, meta: new MetadataBuilder(limits.maxKeys) };
      }
      if (upper === 'LIST') return { kind: 'list', name: token.name };
      if (METADATA_SECTIONS.has(upper)) return { kind: 'metadata', name: token.name, prefix: upper };
      throw invalidRlist(
        `unknown section [${token.name}]: expected LIST, ${RLIST_METADATA_SECTIONS.join(', ')} or DOCUMENT_<n>`,
        { section: token.name, line: token.line },
      );
    };

    const entry = (token: Extract<RlistToken, { type: 'entry' }>) => {
      const where = { section: section?.name ?? null, key: token.key, line: token.line };
      if (!section) throw invalidRlist(`line ${token.line}: key "${token.key}" stands before any section`, where);
      const reserved = token.quotedKey ? '' : token.key.toUpperCase();
      const twice = () => invalidRlist(`section [${section!.name}], key "${token.key}": given twice or conflicting with another key`, where);
      let builder = list;
      let path: string[];
      if (section.kind === 'document') {
        if (reserved === 'HREF' || reserved === 'FILE') {
          if (section.href !== undefined) throw twice();
          if (token.value === '') throw invalidRlist(`section [${section.name}], key "${token.key}": the value is empty`, where);
          section.href = token.value;
          return;
        }
        builder = section.meta;
        path = reserved === 'NAME' ? ['name'] : splitPath(token.key);
      } else if (section.kind === 'list') {
        if (reserved === 'NAME') {
          if (name !== undefined) throw twice();
          name = token.value;
          return;
        }
        path = splitPath(token.key);
      } else {
        path = [section.prefix, ...splitPath(token.key)];
      }
      const res = builder.set(path, token.value);
      if (res === 'full') throw invalidRlist(`section [${section.name}], key "${token.key}": more than ${limits.maxKeys} keys`, where);
      if (res !== 'new') throw twice();
    };

    function* handle(tokens: RlistToken[]): Generator<ParsedListItem> {
      for (const token of tokens) {
        if (token.type === 'entry') {
          entry(token);
          continue;
        }
        const item = finish();
        if (item) yield item;
        section = open(token);
      }
    }

    try {
      let first = true;
      for await (const chunk of text) {
        let str = chunk as string;
        if (first && str.charCodeAt(0) === 0xfeff) str = str.slice(1);
        first = false;
        yield* handle(lexer.push(str));
      }
      yield* handle(lexer.end());
      const item = finish();
      if (item) yield item;
      done = true;
    } finally {
      source.off('error', onSourceError);
      source.unpipe(text);
      text.destroy();
    }
  }

  return {
    items: items(),
    header: () => (done ? { ...(name !== undefined ? { name } : {}), metadata: list.root } : headerNotReady()),
  };
}

const quote = (s: string) => `"${s.replace(/[\\"]/g, '\\$&')}"`;
const BARE = /^[A-Za-z0-9_.-]+$/;
/** A key goes unquoted only when it reads back as itself: simple characters and not a reserved word there. */
const keyText = (key: string, reserved: readonly string[]) => (BARE.test(key) && !reserved.includes(key.toUpperCase()) ? key : quote(key));

/** Writes a list as RList (CRLF), one pass over the items; documents are numbered from 1. */
export function writeRlist(list: ListSource): Readable {
  async function* lines(): AsyncGenerator<string> {
    const sections = new Map<string, string[]>();
    const listLines: string[] = [];
    if (list.name !== undefined) listLines.push(`NAME=${quote(list.name)}`);
    for (const [path, value] of flatten(list.metadata)) {
      const [top, ...rest] = path;
      if (rest.length > 0 && METADATA_SECTIONS.has(top!)) {
        const lines = sections.get(top!) ?? [];
        lines.push(`${keyText(joinPath(rest), [])}=${quote(value)}`);
        sections.set(top!, lines);
      } else {
        listLines.push(`${keyText(joinPath(path), ['NAME'])}=${quote(value)}`);
      }
    }
    if (listLines.length > 0) yield `[LIST]${EOL}${listLines.join(EOL)}${EOL}`;
    for (const [section, entries] of sections) yield `[${section}]${EOL}${entries.join(EOL)}${EOL}`;
    let n = 0;
    for await (const item of list.items()) {
      let out = `[DOCUMENT_${++n}]${EOL}HREF=${quote(item.href)}${EOL}`;
      for (const [path, value] of flatten(item.metadata)) {
        const key = path.length === 1 && path[0] === 'name' ? 'NAME' : keyText(joinPath(path), ['HREF', 'FILE', 'NAME']);
        out += `${key}=${quote(value)}${EOL}`;
      }
      yield out;
    }
  }
  return Readable.from(lines());
}
