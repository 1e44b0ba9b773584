import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventually, startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';
import { makePrinter, pp, submit } from './helpers.js';

/** The README's first print job, with workers: a directory printer, POST /v3/jobs/, watch it print. */
let rt: TestRuntime;
let api: TestClient;
beforeAll(async () => {
  rt = await startTestRuntime();
  api = rt.client.withToken(await rt.token('alice', ['admin']));
});
afterAll(async () => rt?.close());

it('prints a submitted document and a test page into the directory, each once; logs, runtime and collect tell the story', async () => {
  const { dir } = await makePrinter(api, 'Büro 1/links');
  const job = await submit(api, 'Büro 1/links', '%PDF-1.4 first print', { name: 'hello.pdf' });
  const done = await eventually(async () => {
    const res = await api.get(`/v3/jobs/${job.body.id}`);
    return res.body.status === 'processed' ? res.body : undefined;
  });
  expect(done.finished).not.toBeNull();
  const test = await api.put(`${pp('Büro 1/links')}/createTestJob`);
  await eventually(async () => ((await api.get(`/v3/jobs/${test.body.id}`)).body.status === 'processed' ? true : undefined));
  const files = (await readdir(dir)).filter((f) => !f.startsWith('.'));
  expect(files).toHaveLength(2);
  const printed = await Promise.all(files.map((f) => readFile(path.join(dir, f))));
  expect(printed.some((b) => b.toString() === '%PDF-1.4 first print')).toBe(true);
  expect(printed.some((b) => b.subarray(0, 5).toString() === '%PDF-' && b.length > 500)).toBe(true);
  const log = (await api.get(`/v3/jobs/${job.body.id}/logs`)).body.map((l: { text: string }) => l.text);
  expect(log[0]).toMatch(/^submitted by alice/);
  expect(log.length).toBeGreaterThan(1);
  const runtime = await api.put(`${pp('Büro 1/links')}/runtime`);
  expect(runtime.body).toMatchObject({ status: 'idle', queuedJobs: 0, currentJob: null });
  expect(runtime.body.lastPrintedJobTime).not.toBeNull();
  const zip = await api.get(`/v3/jobs/${job.body.id}/collect`);
  expect(zip.status).toBe(200);
  expect(zip.contentType).toBe('application/zip');
  expect(zip.raw.subarray(0, 2).toString()).toBe('PK');
  expect(zip.raw.includes(Buffer.from('job.json'))).toBe(true);
  // repeat prints it again
  expect((await api.put(`/v3/jobs/${job.body.id}/repeat`)).body.status).toBe('waitprocessing');
  await eventually(async () => ((await api.get(`/v3/jobs/${job.body.id}`)).body.status === 'processed' ? true : undefined));
  expect((await readdir(dir)).filter((f) => !f.startsWith('.'))).toHaveLength(3);
});
