import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, type TestClient } from '../../helpers/client.js';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';

/**
 * Panels, the configuration tree and sessions on the embedded PGlite database
 * (the same SQL as on PostgreSQL: generated names under the holder's advisory
 * lock, the `COLLATE "C"` subtree ranges, the sessions count).
 */

let rt: TestRuntime;
let admin: TestClient;

beforeAll(async () => {
  rt = await startTestRuntime({ db: 'pglite' });
  admin = rt.client.withToken(await rt.token('root', ['admin']));
});
afterAll(() => rt.close());

describe('on PGlite', () => {
  it('panels: generated names, 409 for a name in use, replace and delete', async () => {
    const made = await Promise.all([admin.post('/v1/panels', {}), admin.post('/v1/panels', {}), admin.post('/v1/panels', { name: 'Mine' })]);
    expect(made.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(made.slice(0, 2).map((r) => r.body.name).sort()).toEqual(['Panel 1', 'Panel 2']);
    expectError(await admin.post('/v1/panels', { name: 'Mine' }), 409, 'NAME_EXISTS');
    expect((await admin.put(`/v1/panels/${made[2]!.body.pid}`, { name: 'Yours', x: 1 })).body).toMatchObject({ name: 'Yours', x: 1 });
    expect((await admin.delete(`/v1/panels/${made[2]!.body.pid}`)).body.name).toBe('Yours');
    expect((await admin.get('/v1/panels?sort=-name')).body.map((p: { name: string }) => p.name)).toEqual(['Panel 2', 'Panel 1']);
  });

  it('configuration tree: keys strictly below a path, subtree delete', async () => {
    for (const p of ['a/b', 'a/c/d', 'a-b', 'a%/x']) expect((await admin.put(`/v1/config?path=${encodeURIComponent(p)}`, { p })).status).toBe(200);
    expect((await admin.get('/v1/config?path=a&keys')).body).toEqual(['a/b', 'a/c/d']);
    expect((await admin.get('/v1/config?keys')).body).toEqual(['a%/x', 'a-b', 'a/b', 'a/c/d']);
    expect((await admin.delete('/v1/config?path=a')).body).toEqual({ path: 'a', deleted: 2 });
    expect((await admin.get('/v1/config?path=a-b')).body).toEqual({ p: 'a-b' });
  });

  it('sessions: counted', async () => {
    await rt.client.withToken(await rt.token('root', ['admin'])).get('/v1/services');
    expect((await admin.get('/v1/sessions')).body).toEqual({ count: 2 });
  });
});
