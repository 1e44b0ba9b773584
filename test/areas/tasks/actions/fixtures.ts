import { randomUUID } from 'node:crypto';
import type { Sql } from '../../../../src/storage/driver/database.js';
import type { TaskStatus } from '../../../../src/areas/tasks/actions/task-states.js';
import { effectKey } from '../../../../src/connectors/mock/mock-tasks.js';

/** What a test task is made of (the tasks area's create route writes the same rows). */
export interface TaskSpec {
  sid: string;
  creator?: string;
  /** The creator's roles the task keeps for its runs (`tasks.principal`; default admin). */
  roles?: string[];
  status?: TaskStatus;
  metadata?: Record<string, unknown>;
  listMetadata?: Record<string, unknown>;
  items?: { href?: string; metadata?: Record<string, unknown>; doc?: { sid: string; uuid: string } }[];
}

/**
 * A task factory: the task row, its input list and items, in one transaction,
 * in any status (the state-table tests need every one) and for services
 * without the tasks facet (the 404 tests). The HTTP create route is used
 * where the test is about the whole path (`http.test.ts`).
 * Returns the tid and the item ids in order.
 */
export async function createTask(db: { transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> }, spec: TaskSpec): Promise<{ tid: string; items: string[] }> {
  const tid = randomUUID();
  const lid = randomUUID();
  const items = (spec.items ?? []).map(() => randomUUID());
  await db.transaction(async (tx) => {
    const creator = spec.creator ?? 'alice';
    const principal = { user: creator, identities: [creator], roles: spec.roles ?? ['admin'], ownOnly: false };
    await tx.query(`INSERT INTO tasks (tid, sid, name, status, metadata, creator, principal) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [tid, spec.sid, `task ${tid.slice(0, 8)}`, spec.status ?? 'idle', JSON.stringify(spec.metadata ?? {}), creator, JSON.stringify(principal)]);
    await tx.query(`INSERT INTO lists (lid, kind, tid, metadata, creator, item_count) VALUES ($1, 'input', $2, $3, $4, $5)`,
      [lid, tid, JSON.stringify(spec.listMetadata ?? {}), spec.creator ?? 'alice', spec.items?.length ?? 0]);
    const specs = spec.items ?? [];
    // one statement for all items: 1,000-item tasks are made quickly
    if (specs.length > 0) {
      await tx.query(
        `INSERT INTO list_items (id, lid, position, href, metadata, doc_sid, doc_uuid)
         SELECT id, $1, ord - 1, href, metadata, doc_sid, doc_uuid
         FROM unnest($2::uuid[], $3::text[], $4::jsonb[], $5::text[], $6::uuid[]) WITH ORDINALITY AS u(id, href, metadata, doc_sid, doc_uuid, ord)`,
        [lid, items, specs.map((s, i) => s.href ?? `https://example.org/doc-${i}.pdf`), specs.map((s) => JSON.stringify(s.metadata ?? {})),
          specs.map((s) => s.doc?.sid ?? null), specs.map((s) => s.doc?.uuid ?? null)]);
    }
  });
  return { tid, items };
}

/** The status of a task. */
export async function statusOf(db: Sql, tid: string): Promise<string> {
  const { rows } = await db.query<{ status: string }>('SELECT status FROM tasks WHERE tid = $1', [tid]);
  return rows[0]!.status;
}

/** The mock connector's side-effect count per item id of a task (absent: never processed). */
export async function effectCounts(db: Sql, sid: string, tid: string): Promise<Map<string, number>> {
  const { rows } = await db.query<{ key: string; value: number }>(
    `SELECT key, value FROM connector_state WHERE sid = $1 AND key LIKE $2`, [sid, `${effectKey(tid, '')}%`]);
  return new Map(rows.map((r) => [r.key.slice(effectKey(tid, '').length), Number(r.value)]));
}

/** Item outcomes of a task, counted. */
export async function outcomes(db: Sql, tid: string): Promise<Record<string, number>> {
  const { rows } = await db.query<{ outcome: string; n: number }>('SELECT outcome, count(*)::int AS n FROM task_items WHERE tid = $1 GROUP BY outcome', [tid]);
  return Object.fromEntries(rows.map((r) => [r.outcome, r.n]));
}
