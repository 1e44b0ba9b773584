import { randomUUID } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as lists from '../../../../src/areas/lists/store/list-store.js';
import { parseListQuery } from '../../../../src/query/list-query.js';
import type { Database } from '../../../../src/storage/driver/database.js';
import * as store from '../../../../src/areas/tasks/store/task-store.js';
import { countTasks, countTasksOf, pageTaskIds, tasksByIds, type TaskScope } from '../../../../src/areas/tasks/store/task-queries.js';
import type { ListQuery } from '../../../../src/query/tree.js';
import type { Sql } from '../../../../src/storage/driver/database.js';
import { FINAL_OUTCOMES, OPEN_OUTCOMES, sqlList } from '../../../../src/areas/tasks/actions/task-states.js';
import { bothDrivers, type TestDatabase } from '../../../helpers/databases.js';

/** The task store on both drivers: searches by scope, filters, sort and paging, counts, inputDocument, deletion with the lists. */

/** A search as the API makes it: the page's tids, then their rows. */
const listTasks = async (sql: Sql, scope: TaskScope, q: ListQuery) => tasksByIds(sql, await pageTaskIds(sql, scope, q));

for (const [driver, open] of bothDrivers()) {
  describe(`task store on ${driver}`, () => {
    let t: TestDatabase;
    let db: Database;
    const doc = randomUUID();
    const tids: string[] = [];

    beforeAll(async () => {
      t = await open();
      db = t.db;
      for (let i = 0; i < 6; i++) {
        const task = await store.insertTask(db, {
          tid: randomUUID(), sid: i < 4 ? 'a' : 'b', name: `t${i}`, type: null,
          metadata: { day: `2026-01-0${i + 1}`, deep: { n: i } }, creator: i % 2 === 0 ? 'ann' : 'bob', owner: i === 1 ? 'ann' : null,
          principal: { user: i % 2 === 0 ? 'ann' : 'bob', identities: [i % 2 === 0 ? 'ann' : 'bob'], roles: ['user'], ownOnly: false },
        });
        tids.push(task.tid);
        const input = await lists.createList(db, { kind: 'input', tid: task.tid });
        await lists.createList(db, { kind: 'output', tid: task.tid });
        if (i === 2 || i === 5) await lists.appendItem(db, input.lid, { href: `/v1/services/store/repo/${doc}`, metadata: {} });
        await lists.appendItem(db, input.lid, { href: 'https://example.com/x', metadata: {} });
      }
      // the same document in an output list does not count
      const out = (await lists.getTaskList(db, tids[0]!, 'output'))!;
      await lists.appendItem(db, out.lid, { href: `/v1/services/store/repo/${doc}`, metadata: {} });
    });
    afterAll(() => t.drop());

    const q = (raw: Record<string, string> = {}) => parseListQuery(raw, []);
    const names = (rows: store.TaskRow[]) => rows.map((r) => r.name);

    it('searches per service or across services, limited to owners when asked', async () => {
      expect(names(await listTasks(db, { sid: 'a' }, q()))).toEqual(['t0', 't1', 't2', 't3']);
      expect(names(await listTasks(db, {}, q()))).toEqual(['t0', 't1', 't2', 't3', 't4', 't5']);
      expect(names(await listTasks(db, { ownedBy: ['ann'] }, q()))).toEqual(['t0', 't1', 't2', 't4']);
      expect(names(await listTasks(db, { sid: 'b', ownedBy: ['bob'] }, q()))).toEqual(['t5']);
      expect(await countTasks(db, { ownedBy: ['ann'] }, q({ limit: '1' }))).toBe(4);
    });

    it('filters nested metadata exactly or by regex, sorts and pages', async () => {
      expect(names(await listTasks(db, {}, q({ 'metadata.deep.n': '3' })))).toEqual(['t3']); // compared by its text form
      expect(names(await listTasks(db, {}, q({ day: '/0[56]$/' })))).toEqual(['t4', 't5']);
      expect(names(await listTasks(db, {}, q({ sort: '-metadata.deep.n', limit: '2', offset: '1' })))).toEqual(['t4', 't3']);
      expect(await countTasks(db, {}, q({ name: '/^T[0-2]$/i' }))).toBe(3);
    });

    it('reads rows by tid in the order given, leaving out tids without a task; counts a user\'s tasks as creator or owner, up to a bound', async () => {
      const gone = randomUUID();
      expect((await tasksByIds(db, [tids[2]!, gone, tids[0]!], { cstats: false })).map((r) => r.name)).toEqual(['t2', 't0']);
      expect(await countTasksOf(db, ['ann'], 100)).toBe(4); // t0, t2, t4 created, t1 owned
      expect(await countTasksOf(db, ['ann'], 2)).toBe(2);
      expect(await countTasksOf(db, ['bob', 'nobody'], 100)).toBe(3);
      await db.transaction(async (tx) => store.lockTaskCounts(tx, ['bob', 'ann', 'bob']));
    });

    it('finds tasks by a document in their input list (not in the output list)', async () => {
      expect(names(await listTasks(db, { inputDocument: doc }, q()))).toEqual(['t2', 't5']);
      expect(names(await listTasks(db, { inputDocument: doc, sid: 'b' }, q()))).toEqual(['t5']);
      expect(await countTasks(db, { inputDocument: randomUUID() }, q())).toBe(0);
    });

    it('updates and deletes; the lists and items go with the task', async () => {
      const updated = await store.updateTask(db, tids[3]!, { name: 'renamed', type: 'x', metadata: { a: 1 } });
      expect(updated).toMatchObject({ name: 'renamed', type: 'x', metadata: { a: 1 } });
      expect(updated.modified.getTime()).toBeGreaterThanOrEqual(updated.created.getTime());
      await store.deleteTask(db, tids[3]!);
      expect(await store.getTask(db, tids[3]!)).toBeUndefined();
      const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM lists WHERE tid = $1', [tids[3]]);
      expect(rows[0]!.n).toBe(0);
    });

    it('reads a task with or without its cstats, locked in a transaction when asked', async () => {
      const tid = tids[0]!;
      await db.query(`INSERT INTO task_items (tid, item, run, chunk, outcome, job_id, state) VALUES ($1, $2, 1, 0, 'done', 'j1', 'printed')`, [tid, randomUUID()]);
      expect(Object.keys((await store.getTask(db, tid))!.cstats)).toEqual(['j1']);
      expect((await store.getTask(db, tid, { cstats: false }))!.cstats).toEqual({});
      expect(await db.transaction((tx) => store.getTask(tx, tid, { lock: true }))).toMatchObject({ tid, name: 't0' });
    });
  });
}

describe('statement files of the task store', () => {
  const dir = new URL('../../../../src/areas/tasks/store/statements/', import.meta.url);
  const files = readdirSync(dir).filter((f) => f.endsWith('.sql'));

  it('open with a header naming parameters, locks and guarantees', () => {
    expect(files.sort()).toEqual(['start-runs.sql', 'write-final-reports.sql']);
    for (const f of files) {
      const header = readFileSync(new URL(f, dir), 'utf8').split('\n').filter((l) => l.startsWith('--')).join('\n');
      expect(header, f).toMatch(/Parameters/);
      expect(header, f).toMatch(/Locks, in order/);
      expect(header, f).toMatch(/Guarantees/);
    }
  });

  it('spell out outcome lists of the state table only', () => {
    const known = new Set([sqlList(OPEN_OUTCOMES), sqlList(FINAL_OUTCOMES)]);
    for (const f of files) {
      const body = readFileSync(new URL(f, dir), 'utf8').split('\n').filter((l) => !l.trimStart().startsWith('--')).join('\n');
      for (const [, list] of body.matchAll(/outcome IN \(([^)]*)\)/g)) expect(known, `${f}: ${list}`).toContain(list);
    }
  });
});
