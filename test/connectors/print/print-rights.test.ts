import { afterAll, beforeAll, expect, it } from 'vitest';
import { AppError } from '../../../src/errors/app-error.js';
import { printPort } from '../../../src/runtime/print-port.js';
import type { TestClient } from '../../helpers/client.js';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import { TcpSink } from '../../helpers/tcp-sink.js';
import { act, entryOf, jobsOf, printTask, storeDocument, taskWhen } from './helpers.js';

/**
 * A print task reads its documents with its owner's rights (issue 20, item
 * 2): bob's task cannot print alice's document, neither through the task run
 * (the item runner refuses it before the connector sees it) nor through the
 * print port itself (it opens the document with the task's principal), and
 * no job is made. Alice's own task prints it, as alice.
 */
let rt: TestRuntime;
let alice: TestClient;
let bob: TestClient;
let sink: TcpSink;

beforeAll(async () => {
  rt = await startTestRuntime();
  const admin = rt.client.withToken(await rt.token('admin', ['admin']));
  alice = rt.client.withToken(await rt.token('alice', ['user']));
  bob = rt.client.withToken(await rt.token('bob', ['user']));
  sink = await TcpSink.start();
  expect((await admin.post('/v3/printers/', { name: 'rights printer', connection: sink.connection })).status).toBe(200);
});
afterAll(async () => {
  await sink?.close();
  await rt?.close();
});

it("rights: bob's print task cannot print alice's document; alice's own task prints it as alice", { timeout: 60_000 }, async () => {
  const secret = await storeDocument(alice, 'alice-secret.pdf', '%PDF-1.4 alice only');
  const mine = await storeDocument(bob, 'bob.pdf', '%PDF-1.4 bob');
  const { tid, items } = await printTask(bob, "bob's", [
    { href: secret, metadata: { printer: 'rights printer' } },
    { href: mine, metadata: { printer: 'rights printer' } },
  ]);

  // the port itself refuses, whatever called it: the document is opened with the task's principal (bob)
  const port = printPort(() => rt.services);
  const refused = await port.submitItem({ sid: 'print', tid, item: items[0]!, href: secret, printer: 'rights printer' }).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(AppError);
  expect(refused).toMatchObject({ code: 'NOT_OWNER' });
  expect((refused as Error).message).toBe(`document ${secret} cannot be printed for bob: this object belongs to another user (read on documents is limited to your own)`);
  expect(await jobsOf(bob, tid)).toEqual([]);

  // the run: the item fails naming the document, bob's own document prints
  await act(bob, tid, 'start');
  const failed = await taskWhen(bob, tid, 'failed');
  expect(entryOf(failed.cstats, items[0]!)).toMatchObject({ state: 'failed', message: `document ${secret} belongs to another user: bob may not read it` });
  expect(entryOf(failed.cstats, items[1]!)).toMatchObject({ state: 'processed' });
  const admin = rt.client.withToken(await rt.token('admin', ['admin']));
  const jobs = await jobsOf(admin, tid);
  expect(jobs.map((j) => j.fileName)).toEqual(['bob.pdf']);
  expect(sink.received().map(String)).toEqual(['%PDF-1.4 bob']);

  // alice's task prints her document, the job hers
  const own = await printTask(alice, "alice's", [{ href: secret, metadata: { printer: 'rights printer' } }]);
  await act(alice, own.tid, 'start');
  await taskWhen(alice, own.tid, 'completed');
  expect(await jobsOf(alice, own.tid)).toMatchObject([{ user: 'alice', fileName: 'alice-secret.pdf', status: 'processed' }]);
});
