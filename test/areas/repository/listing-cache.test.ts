import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';

/**
 * Children listings are cached per API process and keyed on the service's change
 * counter in PostgreSQL: a change made anywhere (this process, another API
 * process, a worker, SQL) is visible at once, and nobody sees another's view.
 */
let a: TestRuntime;
let b: TestRuntime;
const base = '/v1/services/store/repo';

beforeAll(async () => {
  a = await startTestRuntime();
  b = await startTestRuntime({ shareWith: a, parts: { api: true, workers: false } });
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

describe('listing cache', () => {
  it('a change through another API process is visible at once', async () => {
    const apiA = a.client.withToken(await a.token('alice', ['admin']));
    const apiB = b.client.withToken(await b.token('alice', ['admin']));
    const col = (await apiA.post(base, { name: 'cached', type: 'collection' })).body.uuid as string;
    const doc = (await apiA.post(`${base}/${col}`, { name: 'one.txt', type: 'document', metadata: { v: 1 } })).body.uuid as string;
    expect((await apiA.get(`${base}/${col}/children`)).body[0].metadata).toEqual({ v: 1 });
    expect((await apiA.get(`${base}/${col}/children`)).body[0].metadata).toEqual({ v: 1 }); // served from the cache
    expect((await apiB.patch(`${base}/${doc}`, { metadata: { v: 2 } })).status).toBe(200);
    expect((await apiA.get(`${base}/${col}/children`)).body[0].metadata).toEqual({ v: 2, });
    await apiB.post(`${base}/${col}`, { name: 'two.txt', type: 'document' });
    expect((await apiA.get(`${base}/${col}/children`)).body).toHaveLength(2);
    // a change that bypasses the API entirely
    await a.services.db.query(`UPDATE entries SET metadata = '{"v": 3}' WHERE uuid = $1`, [doc]);
    expect((await apiA.get(`${base}/${col}/children`)).body[0].metadata).toEqual({ v: 3 });
    await apiB.delete(`${base}/${col}`);
    expect((await apiA.get(`${base}/${col}/children`)).status).toBe(404);
  });

  it("one user's cached view is never served to another", async () => {
    const alice = a.client.withToken(await a.token('alice', ['user']));
    const bob = a.client.withToken(await a.token('bob', ['user']));
    const admin = a.client.withToken(await a.token('root', ['admin']));
    const col = (await admin.post(base, { name: 'shared-folder', type: 'collection' })).body.uuid as string;
    await admin.post(`${base}/${col}`, { name: 'alice.txt', type: 'document' }, { headers: { 'x-owner': 'alice' } });
    await admin.post(`${base}/${col}`, { name: 'bob.txt', type: 'document' }, { headers: { 'x-owner': 'bob' } });
    const names = async (c: typeof alice) => (await c.get(`${base}/${col}/children`)).body.map((e: { name: string }) => e.name);
    // the folder belongs to root: users may not list it; the admin sees both
    expect((await alice.get(`${base}/${col}/children`)).status).toBe(403);
    expect(await names(admin)).toEqual(['alice.txt', 'bob.txt']);
    expect((await bob.get(`${base}/${col}/children`)).status).toBe(403);
    // in the shared root each user sees only their own
    await alice.post(base, { name: 'a-root.txt', type: 'document' });
    const root = (await admin.get(`${base}?scope=root`)).body.uuid as string;
    const aliceRoot = (await alice.get(`${base}/${root}/children`)).body.map((e: { name: string }) => e.name);
    const bobRoot = await bob.get(`${base}/${root}/children`);
    expect(aliceRoot).toEqual(['a-root.txt']);
    expect(bobRoot.status).toBe(404);
  });
});
