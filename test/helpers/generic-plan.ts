import type { Database, Sql } from '../../src/storage/driver/database.js';

/** One statement as a store function sent it: its text and parameters. */
export interface SentStatement {
  text: string;
  params: readonly unknown[];
}

/**
 * The last statement `fn` sends, caught on a transaction that is rolled back
 * (so nothing it changes stays).
 */
export async function lastStatement(db: Database, fn: (sql: Sql) => Promise<unknown>): Promise<SentStatement> {
  let seen: SentStatement | undefined;
  await db.transaction(async (tx) => {
    const spy = { ...tx, query: (text: string, params?: readonly unknown[]) => { seen = { text, params: params ?? [] }; return tx.query(text, params); } } as typeof tx;
    await fn(spy);
    throw new Error('rollback');
  }).catch((err: Error) => {
    if (err.message !== 'rollback') throw err;
  });
  if (!seen) throw new Error('the function sent no statement');
  return seen;
}

/**
 * The generic plan PostgreSQL makes for a prepared statement (what a pooled
 * connection runs from the sixth call on), explained with `options` (e.g.
 * `ANALYZE, BUFFERS`: then the statement runs) in a transaction that is
 * rolled back. A utility statement takes no parameters, so the values go in
 * as literals (arrays as array literals).
 */
export async function explainGenericPlan(db: Database, { text, params }: SentStatement, options = ''): Promise<string> {
  const quote = (v: unknown) => `'${String(v).replace(/'/g, "''")}'`;
  const element = (v: unknown) => `"${String(v).replace(/["\\]/g, (c) => `\\${c}`)}"`;
  const literal = (v: unknown) => (v === null || v === undefined ? 'NULL' : Array.isArray(v) ? quote(`{${v.map(element).join(',')}}`) : quote(v));
  let plan = '';
  await db.transaction(async (tx) => {
    await tx.exec('SET LOCAL plan_cache_mode = force_generic_plan');
    await tx.exec(`PREPARE generic_plan AS ${text}`);
    const { rows } = await tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${options ? `(${options}) ` : ''}EXECUTE generic_plan(${params.map(literal).join(', ')})`);
    await tx.exec('DEALLOCATE generic_plan');
    plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    throw new Error('rollback');
  }).catch((err: Error) => {
    if (err.message !== 'rollback') throw err;
  });
  return plan;
}
