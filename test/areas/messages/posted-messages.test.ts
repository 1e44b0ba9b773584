import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';
import { makePrinter, pp, submit } from '../print/helpers.js';
import { getJob } from '../../../src/areas/print/jobs/store/job-reads.js';
import { transitionJob } from '../../../src/areas/print/jobs/store/job-store.js';

/**
 * Messages the runtime posts in the transaction of the change they report
 * (migration 023's triggers): a print job that ends in error tells its owner
 * exactly once, and a change that rolls back tells nobody. And
 * `message.created`: raised into the event stream for every committed
 * message, whoever posted it, never for a rolled-back one.
 */

let rt: TestRuntime;
let alice: TestClient;
let admin: TestClient;
let printer: string;

type Msg = { uuid: string; type: string; text: string; href?: string; source?: string; user: string };

const jobMessages = async (id: number): Promise<Msg[]> => {
  const res = await alice.get(`/v1/messages?href=${encodeURIComponent(`/v3/jobs/${id}`)}`);
  return res.status === 200 ? res.body as Msg[] : [];
};

/** A job of alice's waiting on the paused printer. */
async function waitingJob(): Promise<number> {
  const res = await submit(alice, printer, '%PDF-1.4 test', { name: 'Quarterly report' } as Record<string, string>);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return Number(res.body.id);
}

/** Moves the job to `error` through the job store's one transition (what every engine path that fails a job calls), committed or rolled back. */
async function failJob(id: number, commit: boolean): Promise<void> {
  await rt.services.db.transaction(async (tx) => {
    const job = (await getJob(tx, id, true))!;
    await transitionJob(tx, job, 'error', { message: 'refused: paper jam', log: 'refused: paper jam' });
    if (!commit) throw new Error('rolled back on purpose');
  }).catch((err: Error) => {
    if (commit || err.message !== 'rolled back on purpose') throw err;
  });
}

beforeAll(async () => {
  rt = await startTestRuntime();
  alice = rt.client.withToken(await rt.token('alice', ['user']));
  admin = rt.client.withToken(await rt.token('root', ['admin']));
  printer = (await makePrinter(admin, `held-${randomUUID().slice(0, 8)}`)).name;
  expect((await admin.put(`${pp(printer)}/pause`)).status).toBe(200);
});
afterAll(async () => {
  await rt.close();
});

describe('a print job that ends in error', () => {
  it('tells its owner once, with the reason and a link to the job', async () => {
    const id = await waitingJob();
    expect(await jobMessages(id)).toEqual([]);
    await failJob(id, true);
    const told = await jobMessages(id);
    expect(told).toHaveLength(1);
    expect(told[0]).toMatchObject({ type: 'error', user: 'alice', source: `print:${printer}`, href: `/v3/jobs/${id}` });
    expect(told[0]!.text).toBe(`Print job ${id} "Quarterly report" on printer "${printer}" ended in error: refused: paper jam`);
    // a job already in error that is written again (a log line, the same state) tells nobody again
    await rt.services.db.transaction(async (tx) => {
      await transitionJob(tx, (await getJob(tx, id, true))!, 'error', { log: 'still in error' });
    });
    expect(await jobMessages(id)).toHaveLength(1);
  });

  it('through the dispatch engine: a job whose flow fails in preprocessing tells its owner', async () => {
    const flow = `pages-${randomUUID().slice(0, 8)}`;
    const made = await admin.post('/v3/flows/', { name: flow, steps: [{ use: 'pageRange', with: { pages: '1' } }] });
    expect(made.status, JSON.stringify(made.body)).toBeLessThan(300);
    const flowed = (await makePrinter(admin, `flowed-${randomUUID().slice(0, 8)}`, { flow })).name;
    const res = await submit(alice, flowed, 'not a pdf', { name: 'Broken' } as Record<string, string>);
    expect(res.status).toBe(201);
    const id = Number(res.body.id);
    const told = await eventually(async () => {
      const m = await jobMessages(id);
      return m.length > 0 ? m : undefined;
    });
    expect(told).toHaveLength(1);
    expect(told[0]!.text).toMatch(new RegExp(`^Print job ${id} "Broken" on printer "${flowed}" ended in error: .*flow step 0 \\(pageRange\\) failed`));
  });

  it('a failure that rolls back tells nobody', async () => {
    const id = await waitingJob();
    await failJob(id, false);
    expect((await getJob(rt.services.db, id))!.status).not.toBe('error');
    expect(await jobMessages(id)).toEqual([]);
  });
});

describe('message.created', () => {
  it('is raised into the event stream once per committed message, for its recipient, whoever posted it; never for a rollback or a retried post', async () => {
    const raised = async () => (await rt.services.db.query<{ recipient: string; object: string; payload: { text: string; uuid: string } }>(
      `SELECT recipient, object, payload FROM events WHERE type = 'message.created' ORDER BY id`,
    )).rows;
    const before = (await raised()).length;
    const posted = await alice.post('/v1/messages', { text: 'from the API' });
    expect(posted.status).toBe(200);
    const uuid = randomUUID();
    await rt.services.messages.post('alice', { uuid, type: 'warning', text: 'from a connector' });
    await rt.services.messages.post('alice', { uuid, type: 'warning', text: 'from a connector' }); // a retry: no second row, no second event
    const failed = await waitingJob();
    await failJob(failed, true);
    const rolledBack = await waitingJob();
    await failJob(rolledBack, false);
    const rows = (await raised()).slice(before);
    expect(rows.map((r) => [r.recipient, r.payload.text]).sort()).toEqual([
      ['alice', 'from the API'],
      ['alice', 'from a connector'],
      ['alice', `Print job ${failed} "Quarterly report" on printer "${printer}" ended in error: refused: paper jam`],
    ].sort());
    expect(rows.find((r) => r.object === posted.body.uuid)!.payload).toMatchObject({ uuid: posted.body.uuid, text: 'from the API', type: 'info' });
  });
});
