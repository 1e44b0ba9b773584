import { readdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PDFDocument } from 'pdf-lib';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestClient } from '../../helpers/client.js';
import { eventually, startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import { PRINT } from './helpers.js';

/**
 * The demo of the default configuration, end to end (issue 22, item 5), on
 * the embedded database as `scripts/up` runs it: a PDF dropped into
 * DATA_DIR/hotfolder becomes a document and a started task of the `print`
 * service, which prints it on "Demo printer", the directory printer the
 * service created at start, into DATA_DIR/printed. The job is `processed`
 * with the dropped file's name, the task `completed`.
 */
let rt: TestRuntime;
let admin: TestClient;

beforeAll(async () => {
  // the default configuration's services as they are (the helper leaves the demo printer out unless `services` is given)
  rt = await startTestRuntime({ db: 'pglite', overrides: { services: {} } });
  admin = rt.client.withToken(await rt.token('admin', ['admin']));
});
afterAll(async () => {
  await rt?.close();
});

it('demo: a PDF dropped into the hot folder is printed into DATA_DIR/printed; job processed with its name, task completed', { timeout: 90_000 }, async () => {
  // the service made its printer at start
  const printer = await admin.get(`/v3/printers/${encodeURIComponent('Demo printer')}`);
  expect(printer.status).toBe(200);
  expect(printer.body).toMatchObject({ connection: `file://${path.join(rt.dataDir, 'printed')}`, runtime: { status: 'idle' } });
  // its printers function, through the functions route
  const fn = await admin.post('/v1/services/print/function/printers', {});
  expect(fn.status, JSON.stringify(fn.body)).toBe(200);
  expect(fn.body).toEqual({ printers: [{ name: 'Demo printer', state: 'idle', description: 'Writes each job as a file into DATA_DIR/printed', default: true }] });

  const doc = await PDFDocument.create();
  doc.addPage([300, 200]).drawText('Quarterly report', { x: 20, y: 100 });
  const bytes = Buffer.from(await doc.save());
  const name = 'Quarterly report.pdf';
  // written beside the folder, then moved in: the hot folder sees it whole
  await writeFile(path.join(rt.dataDir, name), bytes);
  await rename(path.join(rt.dataDir, name), path.join(rt.dataDir, 'hotfolder', name));

  const task = await eventually(async () => {
    const tasks = (await admin.get(`${PRINT}?embed=cstats`)).body as { tid: string; name: string; status: string; cstats: Record<string, { state: string; href: string }> }[];
    return tasks.find((t) => t.name === name && t.status === 'completed');
  }, 60_000, 200);
  const [entry] = Object.values(task.cstats);
  expect(entry).toMatchObject({ state: 'processed', href: expect.stringMatching(/^\/v3\/jobs\/\d+$/) });
  const job = await admin.get(entry!.href);
  expect(job.body).toMatchObject({ status: 'processed', printer: 'Demo printer', fileName: name, checkin: { type: 'task' }, task: { sid: 'print', tid: task.tid } });
  const listed = await admin.get('/v3/jobs/');
  expect(listed.body).toEqual(expect.arrayContaining([expect.objectContaining({ id: job.body.id, status: 'processed', fileName: name })]));
  const printed = await readdir(path.join(rt.dataDir, 'printed'));
  expect(printed).toHaveLength(1);
  expect(printed[0]).toMatch(new RegExp(`^${job.body.id}-`));
  expect(await readFile(path.join(rt.dataDir, 'printed', printed[0]!))).toEqual(bytes);
  expect(await readdir(path.join(rt.dataDir, 'hotfolder', 'done'))).toEqual([name]);
});
