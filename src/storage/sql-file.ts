import { readFileSync } from 'node:fs';

/**
 * Statements kept in `.sql` files beside the store that runs them, one
 * operation per file (as BullMQ's `src/commands/*.lua`): the file opens with
 * a `--` header for its readers (parameters, locks in order, guarantees),
 * which is left out of the text sent. A store reads its files once, at
 * module load, so every call sends the very same string (the driver names a
 * prepared statement by its text).
 *
 * `:name` (psql's variable syntax; `::type` casts are not one) is replaced
 * by `vars[name]`: a piece the store derives from its TypeScript tables (a
 * column list, a list of states, a constant), so the statement and the code
 * that reads its rows cannot disagree. Names not given are left alone; a
 * name given and not used is an error (a statement that no longer says what
 * its store thinks it says).
 */
export function sqlFile(url: URL, vars: Readonly<Record<string, string>> = {}): string {
  return fillSql(withoutHeader(read(url)), vars, url);
}

/**
 * A statement in parts, for statements another module assembles (the
 * outbox's fused statements: `with`, `text`, `also`, ...): after the header,
 * each part opens with a line `-- @name`, and the file holds exactly the
 * parts `names`. `vars` as for `sqlFile`, over all parts together.
 */
export function sqlParts<K extends string>(url: URL, names: readonly K[], vars: Readonly<Record<string, string>> = {}): Record<K, string> {
  const [, ...pieces] = read(url).split(/^-- @(\w+)[ \t]*\n/m);
  const found = pieces.filter((_, i) => i % 2 === 0);
  if (found.length !== names.length || !names.every((n) => found.includes(n))) {
    throw new Error(`${url.pathname}: parts ${found.join(', ') || '(none)'}, expected ${names.join(', ')}`);
  }
  const unused = new Set(Object.keys(vars));
  const parts = Object.create(null) as Record<K, string>;
  for (let i = 0; i < pieces.length; i += 2) parts[pieces[i] as K] = fill(pieces[i + 1]!.trim(), vars, unused);
  return checked(parts, unused, url);
}

/** `text` with its `:name` variables replaced (see `sqlFile`), for templates a store fills per call shape. */
export function fillSql(text: string, vars: Readonly<Record<string, string>>, where: URL | string = 'statement'): string {
  const unused = new Set(Object.keys(vars));
  return checked(fill(text, vars, unused), unused, where);
}

function fill(text: string, vars: Readonly<Record<string, string>>, unused: Set<string>): string {
  return text.replace(/(?<![:\w]):([a-z_][a-z0-9_]*)/g, (m, name: string) => {
    if (!Object.hasOwn(vars, name)) return m;
    unused.delete(name);
    return vars[name]!;
  });
}

function checked<T>(filled: T, unused: ReadonlySet<string>, where: URL | string): T {
  if (unused.size > 0) throw new Error(`${where instanceof URL ? where.pathname : where}: ${[...unused].map((n) => `:${n}`).join(', ')} not used`);
  return filled;
}

const read = (url: URL): string => readFileSync(url, 'utf8');

/** The text after the leading `--` lines (and blank lines): the statement itself. */
const withoutHeader = (text: string): string => text.replace(/^(?:[ \t]*(?:--[^\n]*)?\n)*/, '').trim();
