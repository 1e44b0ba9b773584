import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRINTER_OPERATION_RULES, PRINTER_OPERATIONS, PRINTER_STATES, printerOperationAllowed } from '../../../../src/areas/print/printers/printer-states.js';
import { countRows } from '../../../helpers/databases.js';
import { startTestRuntime, type TestRuntime } from '../../../helpers/runtime.js';
import { expectError, type TestClient } from '../../../helpers/client.js';
import { makePrinter, pp, submit } from '../helpers.js';

/** The printers API on real PostgreSQL and Redis; no workers, so queues stay as the tests leave them. */
let rt: TestRuntime;
let admin: TestClient;
let operator: TestClient;
let user: TestClient;

const NAMES = ['with space', "O'Brien's printer", 'floor 3/left', 'Büro – Ост 東京', '🖨️ emoji', '100%', 'a?b#c', '...'];
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a raw row, read loosely
const row = async (name: string): Promise<any> => (await rt.services.db.query('SELECT * FROM printers WHERE name = $1', [name])).rows[0];

beforeAll(async () => {
  rt = await startTestRuntime({ parts: { api: true, workers: false } });
  admin = rt.client.withToken(await rt.token('root', ['admin']));
  operator = rt.client.withToken(await rt.token('olga', ['operator']));
  user = rt.client.withToken(await rt.token('ute', ['user']));
});
afterAll(async () => rt?.close());

describe('names are any Unicode, URL-encoded in paths', () => {
  for (const name of NAMES) {
    it(JSON.stringify(name), async () => {
      const { dir } = await makePrinter(admin, name, { description: 'd', location: 'l' });
      const got = await user.get(pp(name));
      expect(got.body).toMatchObject({ name, connection: `file://${dir}`, description: 'd', location: 'l', enabled: true, paused: false, runtime: { status: 'idle', queuedJobs: 0, currentJob: null, redirect: null } });
      expect((await operator.put(`${pp(name)}/pause`)).body.runtime.status).toBe('paused');
      expect((await operator.put(`${pp(name)}/resume`)).body.paused).toBe(false);
      const job = await submit(user, name);
      expect(job.body.printer).toBe(name);
      expect((await user.get(`${pp(name)}/logs`)).body.map((l: { text: string }) => l.text).join('\n')).toContain('pause by olga');
      const listed = await user.get(`/v3/printers/?$filter=${encodeURIComponent(`name eq '${name.replace(/'/g, "''")}'`)}`);
      expect(listed.body.map((p: { name: string }) => p.name)).toEqual([name]);
    });
  }

  it('unknown names are 404 on every route', async () => {
    for (const name of ['nope', 'with space ', 'ö', "x' or '1'='1"]) {
      const p = pp(name);
      expectError(await admin.get(p), 404, 'PRINTER_NOT_FOUND');
      expectError(await admin.put(p, { connection: 'file:///tmp' }), 404, 'PRINTER_NOT_FOUND');
      expectError(await admin.delete(p), 404, 'PRINTER_NOT_FOUND');
      for (const op of ['checkPhysical', 'createTestJob', 'pause', 'resume', 'runtime']) expectError(await admin.put(`${p}/${op}`), 404, 'PRINTER_NOT_FOUND');
      expectError(await admin.get(`${p}/logs`), 404, 'PRINTER_NOT_FOUND');
      expectError(await admin.put(`${p}/message`, { text: 'x' }), 404, 'PRINTER_NOT_FOUND');
      expectError(await admin.delete(`${p}/message`), 404, 'PRINTER_NOT_FOUND');
      expectError(await admin.put(`${p}/redirect`, { target: null }), 404, 'PRINTER_NOT_FOUND');
    }
  });
});

describe('create, replace, delete', () => {
  it('refuses bad printers with a 4xx error body and stores nothing', async () => {
    const count = () => countRows(rt.services.db, 'printers');
    const before = await count();
    expectError(await admin.post('/v3/printers/', { name: 'x', connection: 'not a url' }), 400, 'INVALID_CONNECTION');
    expectError(await admin.post('/v3/printers/', { name: 'x', connection: 'gopher://host/' }), 400, 'UNSUPPORTED_CONNECTION');
    expectError(await admin.post('/v3/printers/', { name: 'x', connection: 'file:///tmp', flow: 'nope' }), 400, 'INVALID_FLOW');
    expectError(await admin.post('/v3/printers/', { name: '', connection: 'file:///tmp' }), 400, 'VALIDATION_FAILED');
    expectError(await admin.post('/v3/printers/', { name: '..', connection: 'file:///tmp' }), 400, 'VALIDATION_FAILED');
    expectError(await admin.post('/v3/printers/', { name: 'a\u0001b', connection: 'file:///tmp' }), 400, 'VALIDATION_FAILED');
    expectError(await admin.post('/v3/printers/', { name: 'x'.repeat(201), connection: 'file:///tmp' }), 400, 'VALIDATION_FAILED');
    expectError(await admin.post('/v3/printers/', { name: 'x', connection: 'file:///tmp', colour: true }), 400, 'VALIDATION_FAILED');
    expectError(await admin.post('/v3/printers/', ['x']), 400, 'VALIDATION_FAILED');
    expectError(await admin.post('/v3/printers/', { name: 'x', connection: 'file:///tmp', description: 'd'.repeat(2_000_000) }), 413, 'PAYLOAD_TOO_LARGE');
    expectError(await admin.request('POST', '/v3/printers/', { body: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expectError(await operator.post('/v3/printers/', { name: 'x', connection: 'file:///tmp' }), 403, 'FORBIDDEN');
    expectError(await rt.client.post('/v3/printers/', { name: 'x', connection: 'file:///tmp' }), 401, 'UNAUTHORIZED');
    expect(await count()).toBe(before);
    await makePrinter(admin, 'dup');
    expectError(await admin.post('/v3/printers/', { name: 'dup', connection: 'file:///tmp' }), 409, 'PRINTER_EXISTS');
  });

  it('replace keeps the runtime state, refuses renames', async () => {
    await makePrinter(admin, 'r1');
    await operator.put(`${pp('r1')}/pause`);
    await operator.put(`${pp('r1')}/message`, { text: 'toner low' });
    const res = await admin.put(pp('r1'), { connection: 'socket://127.0.0.1:9100', location: 'hall', enabled: false });
    expect(res.body).toMatchObject({ connection: 'socket://127.0.0.1:9100', location: 'hall', description: null, enabled: false, paused: true, message: { text: 'toner low', user: 'olga' }, runtime: { status: 'disabled' } });
    expectError(await admin.put(pp('r1'), { name: 'r2', connection: 'file:///tmp' }), 400, 'VALIDATION_FAILED');
    expectError(await admin.put(pp('r1'), { connection: 'ftp://x' }), 400, 'UNSUPPORTED_CONNECTION');
    expectError(await operator.put(pp('r1'), { connection: 'file:///tmp' }), 403, 'FORBIDDEN');
    expect((await row('r1')).connection).toBe('socket://127.0.0.1:9100');
  });

  it('delete refuses while jobs are unfinished or printers redirect to it', async () => {
    await makePrinter(admin, 'd1');
    await makePrinter(admin, 'd2');
    const job = await submit(admin, 'd1');
    expectError(await admin.delete(pp('d1')), 409, 'PRINTER_IN_USE');
    await admin.put(`/v3/jobs/${job.body.id}/cancel`);
    await operator.put(`${pp('d2')}/redirect`, { target: 'd1' });
    expectError(await admin.delete(pp('d1')), 409, 'PRINTER_IN_USE');
    expectError(await operator.delete(pp('d2')), 403, 'FORBIDDEN');
    await operator.put(`${pp('d2')}/redirect`, { target: null });
    expect((await admin.delete(pp('d1'))).body.name).toBe('d1');
    expect(await row('d1')).toBeUndefined();
    // the job's history stays readable
    expect((await admin.get(`/v3/jobs/${job.body.id}`)).body.printer).toBe('d1');
  });
});

describe('operations', () => {
  for (const op of PRINTER_OPERATIONS) {
    for (const from of PRINTER_STATES) {
      const allowed = printerOperationAllowed(op, from);
      it(`${op} from ${from}: ${allowed ? 'allowed' : '412'}`, async () => {
        const name = `st-${op}-${from}`;
        await makePrinter(admin, name);
        await rt.services.db.query('UPDATE printers SET paused = $2 WHERE name = $1', [name, from === 'paused']);
        const before = await row(name);
        const res = await operator.put(`${pp(name)}/${op}`);
        if (!allowed) {
          expectError(res, 412, 'INVALID_STATE');
          expect(await row(name)).toEqual(before);
          return;
        }
        expect(res.status).toBe(200);
        expect(res.body.paused).toBe(PRINTER_OPERATION_RULES[op].to === 'paused');
      });
    }
  }

  it('a user may read printers but not operate them', async () => {
    await makePrinter(admin, 'u1');
    expect((await user.get(pp('u1'))).status).toBe(200);
    expectError(await user.put(`${pp('u1')}/pause`), 403, 'FORBIDDEN');
    expectError(await user.put(`${pp('u1')}/redirect`, { target: null }), 403, 'FORBIDDEN');
    expectError(await user.put(`${pp('u1')}/message`, { text: 'x' }), 403, 'FORBIDDEN');
    expectError(await user.put(`${pp('u1')}/checkPhysical`), 403, 'FORBIDDEN');
    expectError(await user.put(`${pp('u1')}/createTestJob`), 403, 'FORBIDDEN');
  });

  it('redirect: 412 to itself, to an unknown printer, into a loop; null removes; waiting jobs move along', async () => {
    for (const n of ['ra', 'rb', 'rc']) await makePrinter(admin, n);
    expectError(await operator.put(`${pp('ra')}/redirect`, { target: 'ra' }), 412, 'INVALID_REDIRECT');
    expectError(await operator.put(`${pp('ra')}/redirect`, { target: 'nope' }), 412, 'INVALID_REDIRECT');
    expectError(await operator.put(`${pp('ra')}/redirect`, {}), 400, 'VALIDATION_FAILED');
    expectError(await operator.put(`${pp('ra')}/redirect`, { target: 5 }), 400, 'VALIDATION_FAILED');
    const waiting = await submit(operator, 'ra', 'a', { priority: '80' });
    const paused = await submit(operator, 'ra', 'b');
    await operator.put(`/v3/jobs/${paused.body.id}/pause`);
    expect((await operator.put(`${pp('ra')}/redirect`, { target: 'rb' })).body.runtime.redirect).toBe('rb');
    expect((await operator.put(`${pp('rb')}/redirect`, { target: 'rc' })).body.redirect).toBe('rc');
    // rc -> ra would close ra -> rb -> rc -> ra
    const loop = await operator.put(`${pp('rc')}/redirect`, { target: 'ra' });
    expectError(loop, 412, 'INVALID_REDIRECT');
    expect(loop.body.message).toMatch(/loop/);
    expect((await row('rc')).redirect).toBeNull();
    // moved to rb by the first redirect, then on to rc by rb's; it remembers where it was sent
    expect((await operator.get(`/v3/jobs/${waiting.body.id}`)).body).toMatchObject({ printer: 'rc', redirectedFrom: 'ra' });
    expect((await operator.get(`/v3/jobs/${paused.body.id}`)).body.printer).toBe('ra');
    // a new job for ra lands at the end of the chain
    expect((await submit(operator, 'ra')).body).toMatchObject({ printer: 'rc', redirectedFrom: 'ra' });
    expect((await operator.put(`${pp('ra')}/redirect`, { target: null })).body.redirect).toBeNull();
    expect((await submit(operator, 'ra')).body.printer).toBe('ra');
    const texts = (await operator.get(`/v3/jobs/${waiting.body.id}/logs`)).body.map((l: { text: string }) => l.text);
    expect(texts.slice(-2)).toEqual(['redirected from "ra" to "rb" by olga', 'redirected from "rb" to "rc" by olga']);
  });

  it('message set and removed', async () => {
    await makePrinter(admin, 'm1');
    const set = await operator.put(`${pp('m1')}/message`, { text: 'paper jam' });
    expect(set.body.message).toMatchObject({ text: 'paper jam', user: 'olga' });
    expectError(await operator.put(`${pp('m1')}/message`, { text: '' }), 400, 'VALIDATION_FAILED');
    expectError(await operator.put(`${pp('m1')}/message`, { text: 'x'.repeat(2001) }), 400, 'VALIDATION_FAILED');
    expect((await row('m1')).message.text).toBe('paper jam');
    expect((await operator.delete(`${pp('m1')}/message`)).body.message).toBeNull();
  });

  it('checkPhysical probes the device and stores the result', async () => {
    const { dir } = await makePrinter(admin, 'c1');
    const ok = await operator.put(`${pp('c1')}/checkPhysical`);
    expect(ok.body.physical).toMatchObject({ reachable: true });
    await rm(dir, { recursive: true });
    const gone = await operator.put(`${pp('c1')}/checkPhysical`);
    expect(gone.body.physical).toMatchObject({ reachable: false });
    expect((await row('c1')).physical.reachable).toBe(false);
    await admin.post('/v3/printers/', { name: 'sock', connection: 'socket://127.0.0.1:1' });
    expect((await operator.put(`${pp('sock')}/checkPhysical`)).body.physical).toMatchObject({ reachable: false });
  });

  it('createTestJob submits a generated PDF and answers the job; runtime counts it', async () => {
    await makePrinter(admin, 't1');
    const res = await operator.put(`${pp('t1')}/createTestJob`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ printer: 't1', status: 'waitprocessing', mimeType: 'application/pdf', checkin: { type: 'testpage', source: 'olga' }, user: 'olga' });
    expect(res.body.size).toBeGreaterThan(500);
    const rt1 = await operator.put(`${pp('t1')}/runtime`);
    expect(rt1.body).toEqual({ status: 'idle', currentJob: null, lastPrintedJobTime: null, queuedJobs: 1, redirect: null });
  });

  it('metadata describes the printer fields', async () => {
    const res = await user.get('/v3/printers/metadata');
    expect(res.body.fields.map((f: { name: string }) => f.name)).toEqual(expect.arrayContaining(['name', 'connection', 'enabled', 'paused', 'redirect', 'runtime']));
  });
});
