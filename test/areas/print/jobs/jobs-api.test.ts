import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOB_OPERATION_RULES, JOB_OPERATIONS, JOB_STATES, operationAllowed, requeueState, type JobState } from '../../../../src/areas/print/jobs/job-states.js';
import { countRows } from '../../../helpers/databases.js';
import { startTestRuntime, type TestRuntime } from '../../../helpers/runtime.js';
import { expectError, type TestClient } from '../../../helpers/client.js';
import { makePrinter, submit } from '../helpers.js';

/** The print jobs API on real PostgreSQL and Redis; no workers, so jobs stay where the tests put them. */
let rt: TestRuntime;
let admin: TestClient;
let alice: TestClient;
let bob: TestClient;
let operator: TestClient;

const sql = (text: string, params: unknown[] = []) => rt.services.db.query(text, params);
const jobRow = async (id: number) => (await sql('SELECT status, printer, updated, seq FROM print_jobs WHERE id = $1', [id])).rows[0] as { status: string; printer: string; updated: Date; seq: string } | undefined;
const jobCount = () => countRows(rt.services.db, 'print_jobs');

beforeAll(async () => {
  rt = await startTestRuntime({ parts: { api: true, workers: false }, overrides: { print: { maxDocumentBytes: 4096 } } });
  admin = rt.client.withToken(await rt.token('root', ['admin']));
  alice = rt.client.withToken(await rt.token('alice', ['user']));
  bob = rt.client.withToken(await rt.token('bob', ['user']));
  operator = rt.client.withToken(await rt.token('olga', ['operator']));
  await makePrinter(admin, 'p1');
  await makePrinter(admin, 'p2');
  await makePrinter(admin, 'p3');
  await sql(`INSERT INTO print_flows (name, steps) VALUES ('noop', '[]')`);
});
afterAll(async () => rt?.close());

describe('submit (POST /v3/jobs/, extension)', () => {
  it('streams the document into a job waiting on the printer, answering the job', async () => {
    const res = await submit(alice, 'p1', '%PDF-1.4 hello', { name: 'Report Q1', copies: '2', priority: '70' });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`/v3/jobs/${res.body.id}`);
    expect(res.body).toMatchObject({ status: 'waitprocessing', printer: 'p1', user: 'alice', name: 'Report Q1', copies: 2, priority: 70, size: 14, mimeType: 'application/pdf', checkin: { type: 'api' }, flow: null });
    const withFlow = await submit(alice, 'p1', 'x', { flow: 'noop' });
    expect(withFlow.body.status).toBe('waitpreprocessing');
    const outbox = (await sql(`SELECT data FROM outbox WHERE name = 'print.dispatch'`)).rows;
    // the relay may already have moved it on; either way a dispatch for p1 was asked for in the transaction
    expect(outbox.every((r) => (r.data as { printer: string }).printer === 'p1')).toBe(true);
  });

  it('refuses bad input with a 4xx error body and stores nothing', async () => {
    const before = await jobCount();
    expectError(await submit(alice, 'nope'), 404, 'PRINTER_NOT_FOUND');
    expectError(await submit(alice, 'p1', 'x', { flow: 'nope' }), 404, 'FLOW_NOT_FOUND');
    expectError(await submit(alice, 'p1', 'x', { copies: '0' }), 400, 'VALIDATION_FAILED');
    expectError(await submit(alice, 'p1', 'x', { copies: 'two' }), 400, 'VALIDATION_FAILED');
    expectError(await submit(alice, 'p1', 'x', { priority: '101' }), 400, 'VALIDATION_FAILED');
    expectError(await submit(alice, 'p1', 'x', { colour: 'red' }), 400, 'VALIDATION_FAILED');
    expectError(await alice.request('POST', '/v3/jobs/?printer=p1&printer=p2', { body: 'x' }), 400, 'INVALID_QUERY');
    expectError(await alice.request('POST', '/v3/jobs/', { body: 'x' }), 400, 'VALIDATION_FAILED');
    expectError(await submit(alice, 'p1', Buffer.alloc(5000)), 413, 'PAYLOAD_TOO_LARGE');
    expectError(await alice.request('POST', '/v3/jobs/?printer=p1', { body: 'x', headers: { 'content-type': 'not a type' } }), 400, 'INVALID_CONTENT_TYPE');
    const ro = rt.client.withToken(await rt.token('rita', ['readonly']));
    expectError(await submit(ro, 'p1'), 403, 'FORBIDDEN');
    expectError(await submit(rt.client.withToken(undefined), 'p1'), 401, 'UNAUTHORIZED');
    expectError(await submit(alice, 'p1', 'x', {}).then(() => alice.request('POST', '/v3/jobs/?printer=p1', { body: 'x', headers: { 'x-owner': 'bob' } })), 403, 'IMPERSONATION_DENIED');
    // only the one valid submission in the chain above stored a job
    expect(await jobCount()).toBe(before + 1);
  });
});

describe('state machine: every operation from every state (JOB_OPERATION_RULES)', () => {
  for (const op of JOB_OPERATIONS) {
    for (const from of JOB_STATES) {
      const allowed = operationAllowed(op, from);
      it(`${op} from ${from}: ${allowed ? 'allowed' : '412'}`, async () => {
        const created = await submit(alice, 'p1', 'doc', { flow: 'noop' });
        const id = created.body.id as number;
        await sql(`UPDATE print_jobs SET status = $2, finished = CASE WHEN $2 IN ('processed', 'canceled', 'error') THEN now() END WHERE id = $1`, [id, from]);
        const before = await jobRow(id);
        const res = op === 'move' ? await alice.put(`/v3/jobs/${id}/move`, { printer: 'p2' }) : await alice.put(`/v3/jobs/${id}/${op}`);
        if (!allowed) {
          expectError(res, 412, 'INVALID_STATE');
          expect(res.body.details).toMatchObject({ status: from, operation: op, allowedFrom: [...JOB_OPERATION_RULES[op].from] });
          expect(await jobRow(id)).toEqual(before);
          return;
        }
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        const rule = JOB_OPERATION_RULES[op];
        const expected: JobState = rule.to === 'requeue' ? requeueState({ flow: 'noop', stages: [] }) : rule.to === 'same' ? from : rule.to;
        expect(res.body.status).toBe(expected);
        expect((await jobRow(id))!.status).toBe(expected);
        if (op === 'move') expect(res.body.printer).toBe('p2');
        if (op === 'repeat' || op === 'resume' || op === 'move') expect(BigInt((await jobRow(id))!.seq)).toBeGreaterThan(BigInt(before!.seq));
        const log = await alice.get(`/v3/jobs/${id}/logs`);
        expect(log.body.at(-1).text).toContain(op === 'move' ? 'moved from "p1" to "p2"' : `${op} by alice`);
      });
    }
  }

  it('repeat of a preprocessed job goes straight back to waitprocessing', async () => {
    const { body } = await submit(alice, 'p1', 'doc', { flow: 'noop' });
    await sql(`UPDATE print_jobs SET status = 'processed', finished = now(), stages = '[{"stage":"preprocessed","sha256":"${'a'.repeat(64)}","size":1,"mimeType":"application/pdf","created":"2024-01-01T00:00:00Z"}]' WHERE id = $1`, [body.id]);
    expect((await alice.put(`/v3/jobs/${body.id}/repeat`)).body.status).toBe('waitprocessing');
  });
});

describe('job routes', () => {
  it('answers 404 for ids that name nothing, on every route', async () => {
    for (const id of ['999999', 'abc', '0', '-1', '1.5', '99999999999999999999', "1' or '1'='1"]) {
      const p = `/v3/jobs/${encodeURIComponent(id)}`;
      expectError(await admin.get(p), 404, 'JOB_NOT_FOUND');
      expectError(await admin.delete(p), 404, 'JOB_NOT_FOUND');
      for (const op of ['cancel', 'pause', 'resume', 'repeat']) expectError(await admin.put(`${p}/${op}`), 404, 'JOB_NOT_FOUND');
      expectError(await admin.put(`${p}/move`, { printer: 'p1' }), 404, 'JOB_NOT_FOUND');
      expectError(await admin.put(`${p}/tempfiles`, { keep: true }), 404, 'JOB_NOT_FOUND');
      expectError(await admin.get(`${p}/logs`), 404, 'JOB_NOT_FOUND');
      expectError(await admin.get(`${p}/logfile`), 404, 'JOB_NOT_FOUND');
      expectError(await admin.get(`${p}/pageinfo`), 404, 'JOB_NOT_FOUND');
    }
  });

  it('get, logs as JSON and as text, pageinfo, tempfiles, delete', async () => {
    const { body: job } = await submit(alice, 'p1', '%PDF-1.4 not really', { name: 'a.pdf' });
    const got = await alice.get(`/v3/jobs/${job.id}`);
    expect(got.body).toEqual(job);
    const logs = await alice.get(`/v3/jobs/${job.id}/logs`);
    expect(logs.body[0]).toMatchObject({ level: 'info' });
    expect(logs.body[0].text).toMatch(/^submitted by alice/);
    const text = await alice.get(`/v3/jobs/${job.id}/logfile`);
    expect(text.contentType).toMatch(/^text\/plain/);
    expect(text.body).toMatch(/^\d{4}-\d\d-\d\dT.* INFO +submitted by alice/);
    const info = await alice.get(`/v3/jobs/${job.id}/pageinfo`);
    expect(info.body).toMatchObject({ pages: null, sizes: [], source: 'document' });
    expect((await alice.put(`/v3/jobs/${job.id}/tempfiles`, { keep: true })).body.keepTempfiles).toBe(true);
    expectError(await alice.put(`/v3/jobs/${job.id}/tempfiles`, { keep: 'yes' }), 400, 'VALIDATION_FAILED');
    expectError(await alice.put(`/v3/jobs/${job.id}/tempfiles`), 400, 'BODY_REQUIRED');
    expect((await alice.delete(`/v3/jobs/${job.id}`)).body.id).toBe(job.id);
    expectError(await alice.get(`/v3/jobs/${job.id}`), 404, 'JOB_NOT_FOUND');
    expect(Number((await sql('SELECT count(*) AS n FROM print_logs WHERE job_id = $1', [job.id])).rows[0]!.n)).toBe(0);
  });

  it('pageinfo reads a real PDF (the test page)', async () => {
    const res = await admin.put('/v3/printers/p3/createTestJob');
    expect(res.status).toBe(200);
    const info = await admin.get(`/v3/jobs/${res.body.id}/pageinfo`);
    expect(info.body.pages).toBe(1);
    expect(info.body.sizes[0]).toMatchObject({ widthMm: 210, heightMm: 297 });
  });

  it('move: unknown printer 404, invalid body 400, a redirected target resolves; nothing changes on refusal', async () => {
    const { body: job } = await submit(alice, 'p1', 'doc');
    const before = await jobRow(job.id);
    expectError(await alice.put(`/v3/jobs/${job.id}/move`, { printer: 'nope' }), 404, 'PRINTER_NOT_FOUND');
    expectError(await alice.put(`/v3/jobs/${job.id}/move`, { printer: '' }), 400, 'VALIDATION_FAILED');
    expectError(await alice.put(`/v3/jobs/${job.id}/move`, { printer: 'p2', extra: 1 }), 400, 'VALIDATION_FAILED');
    expectError(await alice.request('PUT', `/v3/jobs/${job.id}/move`, { body: '{"printer":', headers: { 'content-type': 'application/json' } }), 400, 'INVALID_JSON');
    expect(await jobRow(job.id)).toEqual(before);
    await sql(`UPDATE printers SET redirect = 'p3' WHERE name = 'p2'`);
    const moved = await alice.put(`/v3/jobs/${job.id}/move`, { printer: 'p2' });
    expect(moved.body).toMatchObject({ printer: 'p3', redirectedFrom: 'p2' });
    await sql(`UPDATE printers SET redirect = NULL WHERE name = 'p2'`);
  });

  it('rights: a user sees and acts on own jobs only; an operator on all', async () => {
    const { body: mine } = await submit(alice, 'p1', 'doc');
    const { body: his } = await submit(bob, 'p1', 'doc');
    // another user's job is reported absent, as tasks and lists are
    expectError(await alice.get(`/v3/jobs/${his.id}`), 404, 'JOB_NOT_FOUND');
    expectError(await alice.put(`/v3/jobs/${his.id}/cancel`), 404, 'JOB_NOT_FOUND');
    expectError(await alice.delete(`/v3/jobs/${his.id}`), 404, 'JOB_NOT_FOUND');
    expect((await bob.get(`/v3/jobs/${his.id}`)).status).toBe(200);
    const list = await alice.get('/v3/jobs/?$top=1000');
    expect(list.body.every((j: { user: string }) => j.user === 'alice')).toBe(true);
    expect(list.body.some((j: { id: number }) => j.id === mine.id)).toBe(true);
    const all = await operator.get('/v3/jobs/?$top=1000');
    expect(all.body.some((j: { id: number }) => j.id === his.id)).toBe(true);
    expect((await operator.put(`/v3/jobs/${his.id}/pause`)).body.status).toBe('paused');
    // an owner named at submission sees the job too
    const { body: forBob } = await admin.request('POST', '/v3/jobs/?printer=p1', { body: 'x', headers: { 'x-owner': 'bob' } });
    expect((await bob.get(`/v3/jobs/${forBob.id}`)).body.owner).toBe('bob');
  });

  it('listings show every job exactly as GET does', async () => {
    const { body: a } = await submit(alice, 'p1', 'doc', { retention: '60' });
    await sql(`UPDATE print_jobs SET stages = '[{"stage":"preprocessed","sha256":"${'b'.repeat(64)}","size":7,"mimeType":"application/pdf","created":"2024-01-01T00:00:00.000Z"}]',
      pages = 3, next_attempt_at = now(), attempts = 2, task = '{"sid":"print","tid":"t1","item":"i1"}' WHERE id = $1`, [a.id]);
    let i = 0;
    for (const state of JOB_STATES) {
      const { body } = await submit(alice, 'p2', 'doc', { name: `state ${state}`, ...(i++ % 2 ? { retention: '5' } : {}) });
      await sql(`UPDATE print_jobs SET status = $2, finished = CASE WHEN $2 IN ('processed', 'canceled', 'error') THEN now() - interval '1.234567 seconds' END WHERE id = $1`, [body.id, state]);
    }
    const list = await alice.get('/v3/jobs/?$top=1000');
    expect(list.body.length).toBeGreaterThan(JOB_STATES.length);
    for (const item of list.body) expect(item).toEqual((await alice.get(`/v3/jobs/${item.id}`)).body);
    // the listing is written as text (present.ts jobListWriter): byte for byte what GET's objects serialise to
    const singles = await Promise.all(list.body.map(async (item: { id: number }) => (await alice.get(`/v3/jobs/${item.id}`)).raw.toString('utf8')));
    expect(list.raw.toString('utf8')).toBe(`[${singles.join(',')}]`);
    expect(list.contentType).toBe('application/json; charset=utf-8');
    await sql(`UPDATE print_jobs SET name = $2, checkin = '{"type":"api","source":"Tab\\there \\"q\\" é ✓"}', message = $3 WHERE id = $1`, [a.id, 'naïve "quoted" \\ name\n✓', 'line1\r\nline2\u0001']);
    const odd = await alice.get(`/v3/jobs/?$filter=${encodeURIComponent(`id eq ${a.id}`)}`);
    expect(odd.raw.toString('utf8')).toBe(`[${(await alice.get(`/v3/jobs/${a.id}`)).raw.toString('utf8')}]`);
    expect(odd.body[0]).toMatchObject({ name: 'naïve "quoted" \\ name\n✓', message: 'line1\r\nline2\u0001', checkin: { type: 'api', source: 'Tab\there "q" é ✓' } });
    const counted = await alice.get(`/v3/jobs/?$inlinecount=allpages&$top=2&$select=id,status,id&$filter=${encodeURIComponent(`id eq ${a.id}`)}`);
    expect(counted.raw.toString('utf8')).toBe(`{"results":[{"id":${a.id},"status":"waitprocessing"}],"totalCount":1}`);
    const picked = await alice.get(`/v3/jobs/?$select=retention,stages,id&$filter=${encodeURIComponent(`id eq ${a.id}`)}`);
    expect(picked.body).toEqual([{ id: a.id, retention: { seconds: 60, custom: true, deleteAfter: null }, stages: [{ stage: 'preprocessed', size: 7, mimeType: 'application/pdf', created: '2024-01-01T00:00:00.000Z' }] }]);
  });

  it('metadata describes every field with type, filterable and sortable', async () => {
    const res = await alice.get('/v3/jobs/metadata');
    const byName = new Map(res.body.fields.map((f: { name: string }) => [f.name, f]));
    expect(byName.get('status')).toMatchObject({ type: 'text', filterable: true, sortable: true });
    expect(byName.get('created')).toMatchObject({ type: 'date', filterable: true, sortable: true });
    expect(byName.get('checkin')).toMatchObject({ type: 'json', properties: ['type', 'source'] });
    expect(byName.get('stages')).toMatchObject({ filterable: false, sortable: false });
    const { body: job } = await submit(alice, 'p1', 'doc');
    expect(Object.keys(job).sort()).toEqual([...byName.keys(), 'attempts', 'nextAttempt'].sort());
    expect(res.body.query.parameters).toEqual(['$filter', '$orderby', '$top', '$skip', '$select', '$inlinecount']);
  });
});

describe('housekeeping by retention', () => {
  it('deletes finished jobs after their state default or their own retention, paused ones from the pause', async () => {
    const { printJobsArea } = await import('../../../../src/areas/print/jobs/index.js');
    const mk = async (status: string, ageSec: number, retention?: string) => {
      const { body } = await submit(alice, 'p3', 'doc', retention ? { retention } : {});
      await sql(`UPDATE print_jobs SET status = $2, finished = CASE WHEN $2 IN ('processed', 'canceled', 'error') THEN now() - make_interval(secs => $3) END,
        updated = now() - make_interval(secs => $3) WHERE id = $1`, [body.id, status, ageSec]);
      return body.id as number;
    };
    const day = 86_400;
    const gone = [await mk('processed', day + 60), await mk('canceled', day + 60), await mk('error', 3 * day + 60), await mk('paused', 3 * day + 60), await mk('processed', 120, '60')];
    const kept = [await mk('processed', day - 60), await mk('error', 2 * day), await mk('paused', day), await mk('processed', day + 60, '999999'), await mk('waitprocessing', 10 * day)];
    const result = await printJobsArea.housekeeping!(rt.services);
    expect(result.expiredPrintJobs).toBeGreaterThanOrEqual(gone.length);
    for (const id of gone) expect(await jobRow(id)).toBeUndefined();
    for (const id of kept) expect(await jobRow(id)).toBeDefined();
    const shown = await alice.get(`/v3/jobs/${kept[3]}`);
    expect(shown.body.retention).toMatchObject({ seconds: 999999, custom: true });
  });
});
