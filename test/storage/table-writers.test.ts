import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * One writer per table (docs/architecture.md, "Invariants"): the module that
 * owns a table is the only one that inserts, updates, deletes or copies into
 * its rows; everything else calls it. A store's combined statements live in
 * `.sql` files in a `statements/` folder beside it and belong to it. A new
 * table needs a line here; a second writer fails the test.
 */
const OWNERS: Readonly<Record<string, string>> = {
  commands: 'src/areas/commands/command-store.ts',
  config_items: 'src/areas/config-tree/store/config-item-store.ts',
  connector_leases: 'src/connectors/lifecycle/lease-store.ts',
  connector_state: 'src/connectors/lifecycle/state-store.ts',
  deployment: 'src/runtime/deployment-store.ts',
  entries: 'src/areas/repository/entry-store.ts',
  // and `raise_event` (migration 024), which writers call in their own statements, and its triggers
  events: 'src/events/event-store.ts',
  intake_files: 'src/connectors/lifecycle/intake-file-store.ts',
  job_recreations: 'src/worker/recreation-store.ts',
  lists: 'src/areas/lists/store/list-store.ts',
  messages: 'src/areas/messages/store/message-store.ts',
  list_items: 'src/areas/lists/store/list-store.ts',
  outbox: 'src/outbox/outbox-store.ts',
  panels: 'src/areas/panels/store/panel-store.ts',
  print_configs: 'src/areas/print/config/config-store.ts',
  print_documents: 'src/areas/print/jobs/store/job-store.ts',
  print_flows: 'src/areas/print/flows/flow-store.ts',
  print_jobs: 'src/areas/print/jobs/store/job-store.ts',
  print_logs: 'src/areas/print/jobs/store/job-store.ts',
  printers: 'src/areas/print/printers/printer-store.ts',
  schema_migrations: 'src/storage/migrate.ts',
  sessions: 'src/areas/sessions/store/session-store.ts',
  task_items: 'src/areas/tasks/store/task-store.ts',
  tasks: 'src/areas/tasks/store/task-store.ts',
};
/** Tables written only by triggers that their migrations define. */
const TRIGGER_ONLY = new Set(['repo_generations']);

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const rel = (abs: string) => path.relative(ROOT, abs).split(path.sep).join('/');

function filesUnder(dir: string, keep: (name: string) => boolean): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && keep(e.name))
    .map((e) => rel(path.join(e.parentPath, e.name)));
}

const migrations = filesUnder('src/storage/migrations', (n) => n.endsWith('.ts'));
const sources = filesUnder('src', (n) => n.endsWith('.ts') || n.endsWith('.sql')).filter((f) => !f.startsWith('src/storage/migrations/'));
const text = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');

const tablesCreated = [...new Set(migrations.flatMap((f) =>
  [...text(f).matchAll(/CREATE TABLE(?: IF NOT EXISTS)?\s+"?([a-z_][a-z0-9_]*)"?/gi)].map((m) => m[1]!.toLowerCase())))].sort();

const WRITE = /\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|TRUNCATE(?:\s+TABLE)?|COPY)\s+"?([a-z_][a-z0-9_]*)"?[\s(]/gi;

/** Every (file, table) pair where the file's text writes the table. */
function writers(): Map<string, Set<string>> {
  const byTable = new Map<string, Set<string>>();
  for (const f of [...sources, 'src/storage/migrate.ts']) {
    for (const m of text(f).matchAll(WRITE)) {
      const table = m[1]!.toLowerCase();
      if (!tablesCreated.includes(table)) continue; // a word after "update" in prose, a CTE's name
      let set = byTable.get(table);
      if (!set) byTable.set(table, (set = new Set()));
      set.add(f);
    }
  }
  return byTable;
}

/** The files allowed to hold writes to a table: its store and the store's `statements/*.sql`. */
function allowed(table: string, file: string): boolean {
  const owner = OWNERS[table];
  if (!owner) return false;
  if (file === owner) return true;
  return file.endsWith('.sql') && file.startsWith(`${path.posix.dirname(owner)}/statements/`);
}

describe('one writer per table', () => {
  it('finds the tables the migrations create', () => {
    expect(tablesCreated).toContain('print_jobs');
    expect(tablesCreated.length).toBeGreaterThanOrEqual(15);
  });

  it('names an owning store for every table (or says a trigger alone writes it)', () => {
    const unowned = tablesCreated.filter((t) => !OWNERS[t] && !TRIGGER_ONLY.has(t));
    expect(unowned).toEqual([]);
    for (const owner of Object.values(OWNERS)) expect(sources.concat('src/storage/migrate.ts')).toContain(owner);
  });

  it('no module but a table\'s store writes the table', () => {
    const strangers: string[] = [];
    for (const [table, files] of writers()) {
      for (const f of files) if (!allowed(table, f)) strangers.push(`${table} written by ${f} (owner: ${OWNERS[table] ?? 'none: trigger-only'})`);
    }
    expect(strangers).toEqual([]);
  });

  it('a store\'s statements are loaded by a store beside their statements/ folder', () => {
    for (const f of sources.filter((s) => s.endsWith('.sql'))) {
      const at = f.lastIndexOf('/statements/');
      expect(at, `${f} is not in a statements/ folder`).toBeGreaterThan(0);
      const storeDir = f.slice(0, at);
      const spec = `./${f.slice(at + 1)}`;
      const loaders = sources.filter((s) => s.endsWith('.ts') && path.posix.dirname(s) === storeDir && text(s).includes(`'${spec}'`));
      expect(loaders.length, `${f}: loaded by ${loaders.join(', ') || 'no module'} in ${storeDir}`).toBe(1);
    }
  });

  it('only stores run SQL: every module that sends a statement is a store (`*-store.ts`, or in a `store/` folder) or the storage layer', () => {
    const isStore = (f: string) => f.startsWith('src/storage/') || /-store\.ts$/.test(f) || f.includes('/store/');
    const senders = sources.filter((f) => f.endsWith('.ts') && /\.(?:query|copyFrom)(?:<[^>]*>)?\(/.test(text(f)));
    expect(senders.length).toBeGreaterThan(10);
    expect(senders.filter((f) => !isStore(f))).toEqual([]);
  });

  it('the check itself sees a stranger (a write outside the store is caught)', () => {
    const sample = 'await sql.query(`UPDATE print_jobs SET status = $1 WHERE id = $2`, [s, id]);';
    const tables = [...sample.matchAll(WRITE)].map((m) => m[1]);
    expect(tables).toEqual(['print_jobs']);
    expect(allowed('print_jobs', 'src/areas/print/dispatch/dispatcher.ts')).toBe(false);
    expect(allowed('print_jobs', 'src/areas/print/jobs/store/statements/claim.sql')).toBe(true);
    expect(allowed('print_jobs', 'src/areas/print/jobs/store/statements/includes/head.sql')).toBe(true);
    expect(allowed('print_jobs', 'src/areas/print/printers/statements/x.sql')).toBe(false);
  });
});
