import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BlobStore } from '../../../../src/blobs/blob-store.js';
import { createOutbox } from '../../../../src/outbox/outbox.js';
import { submitPrintJob } from '../../../../src/areas/print/jobs/submit-print-job.js';
import { jobIdFor } from '../../../../src/queue/jobs.js';
import type { Database } from '../../../../src/storage/driver/database.js';
import { bothDrivers, type TestDatabase } from '../../../helpers/databases.js';
import { tempDir } from '../../../helpers/fs.js';
import { getJob, inlineDocument, jobLog } from '../../../../src/areas/print/jobs/store/job-reads.js';
import { insertSubmittedJobs } from '../../../../src/areas/print/jobs/store/job-store.js';
import { listJobs } from '../../../../src/areas/print/jobs/store/listing.js';
import { submitTarget, submitTargets } from '../../../../src/areas/print/jobs/store/submission.js';
import { INLINE_DOCUMENT_MAX, openJobDocument } from '../../../../src/areas/print/jobs/job-document.js';
import { jobListWriter, presentJob, selectFields } from '../../../../src/areas/print/jobs/present.js';
import { JOB_FIELDS } from '../../../../src/areas/print/jobs/job-fields.js';
import { parseODataQuery } from '../../../../src/query/odata.js';

const textWriter = jobListWriter;

/** `db` with the text of every `query` it sends pushed to `texts`. */
const recording = (db: Database, texts: string[]): Database => new Proxy(db, {
  get(target, prop) {
    if (prop === 'query') return (text: string, params?: unknown[]) => (texts.push(text), target.query(text, params));
    const v = Reflect.get(target, prop) as unknown;
    return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
  },
}) as Database;

describe.each(bothDrivers())('submitPrintJob on %s', (_name, open) => {
  let t: TestDatabase;
  let dir: string;
  let deps: Parameters<typeof submitPrintJob>[0];
  beforeAll(async () => {
    t = await open();
    dir = await tempDir('wcr-submit-');
    const blobs = new BlobStore(dir);
    await blobs.init();
    deps = { db: t.db, blobs, outbox: createOutbox(), maxBytes: 1000, batch: { maxInFlight: 1, maxBatch: 64 } };
    await t.db.query(`INSERT INTO printers (name, connection) VALUES ('p 1', 'file:///tmp/x'), ('p2', 'file:///tmp/y')`);
    await t.db.query(`INSERT INTO print_flows (name, steps) VALUES ('f', '[]')`);
  });
  afterAll(async () => {
    await t.drop();
  });

  it('stores the document, inserts the job waiting and adds print.dispatch in one transaction', async () => {
    const job = await submitPrintJob(deps, { printer: 'p 1', source: Readable.from([Buffer.from('%PDF-1.4 hi')]), mimeType: 'application/pdf', creator: 'alice', name: 'a' });
    expect(job.status).toBe('waitprocessing');
    expect(Number(job.size)).toBe(11);
    expect(job.blob_sha256).toBe(createHash('sha256').update('%PDF-1.4 hi').digest('hex'));
    // a small document is stored with the job, in the same statement: no blob file
    expect(await inlineDocument(t.db, job.id)).toEqual(Buffer.from('%PDF-1.4 hi'));
    expect(await deps.blobs.has(job.blob_sha256)).toBe(false);
    const { rows } = await t.db.query<{ name: string; data: { printer: string } }>(`SELECT name, data FROM outbox`);
    expect(rows).toEqual([{ name: 'print.dispatch', data: { printer: 'p 1' } }]);
    expect((await jobLog(t.db, Number(job.id))).map((l) => l.text)[0]).toMatch(/submitted by alice/);
  });

  it('keeps documents up to INLINE_DOCUMENT_MAX bytes with the job and streams larger ones into the blob store, in chunks as they come', async () => {
    const big = { ...deps, maxBytes: 0 };
    const bytes = (n: number) => Buffer.alloc(n, n % 251);
    const chunked = (b: Buffer) => Readable.from([b.subarray(0, 1000), b.subarray(1000, 5000), b.subarray(5000)]);
    for (const size of [0, INLINE_DOCUMENT_MAX - 1, INLINE_DOCUMENT_MAX, INLINE_DOCUMENT_MAX + 1, 3 * INLINE_DOCUMENT_MAX + 7]) {
      const doc = bytes(size);
      const job = await submitPrintJob(big, { printer: 'p2', source: chunked(doc), mimeType: 'application/octet-stream', creator: 'sizes' });
      expect(Number(job.size)).toBe(size);
      expect(job.blob_sha256).toBe(createHash('sha256').update(doc).digest('hex'));
      const inline = await inlineDocument(t.db, job.id);
      if (size <= INLINE_DOCUMENT_MAX) {
        expect(inline).toEqual(doc);
        expect(await deps.blobs.has(job.blob_sha256)).toBe(false);
      } else {
        expect(inline).toBeUndefined();
        expect(await readFile(deps.blobs.pathOf(job.blob_sha256))).toEqual(doc);
      }
      // what a delivery reads, either way
      expect(Buffer.concat(await (await openJobDocument(t.db, deps.blobs, job)).toArray())).toEqual(doc);
    }
    // the job's deletion takes its inline document along
    await t.db.query(`DELETE FROM print_jobs WHERE creator = 'sizes'`);
    expect((await t.db.query('SELECT job_id FROM print_documents WHERE job_id NOT IN (SELECT id FROM print_jobs)')).rows).toEqual([]);
    // past maxBytes is refused (413) whether or not it would have fitted inline, and stores nothing
    const small = { ...deps, maxBytes: 100 };
    await expect(submitPrintJob(small, { printer: 'p2', source: chunked(bytes(101)), mimeType: 'text/plain', creator: 'sizes' })).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(Number((await submitPrintJob(small, { printer: 'p2', source: chunked(bytes(100)), mimeType: 'text/plain', creator: 'sizes' })).size)).toBe(100);
    expect((await t.db.query(`SELECT size FROM print_jobs WHERE creator = 'sizes'`)).rows).toEqual([{ size: 100 }]);
    // a refused body is not read to its end: the source is destroyed, as before
    let sent = 0;
    const endless = new Readable({ read() { sent += 1; this.push(bytes(64 * 1024)); } });
    await expect(submitPrintJob({ ...deps, maxBytes: 200_000 }, { printer: 'p2', source: endless, mimeType: 'text/plain', creator: 'sizes' })).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    await new Promise((r) => setImmediate(r));
    expect(endless.destroyed).toBe(true);
    expect(sent).toBeLessThan(20);
    await t.db.query(`DELETE FROM print_jobs WHERE creator = 'sizes'`);
  });

  it('lists jobs as JSON text byte for byte equal to the presented rows (queryArrays on this driver)', async () => {
    // \u0001 is the mark around jsonb in the page PostgreSQL writes (src/areas/print/jobs/store/listing.ts): in values it must come out escaped
    const job = await submitPrintJob(deps, { printer: 'p2', source: Readable.from([Buffer.from('x')]), mimeType: 'text/plain', creator: 'bob', name: 'Ünïcode "q" \\ \n\u0001c' });
    await t.db.query(`UPDATE print_jobs SET status = 'processed', finished = now() - interval '1.5 seconds', retention_sec = 90, pages = 2,
      task = '{"sid":"s","tid":"t \\u0001s","item":"i"}', checkin = '{"type":"api","source":"ua/1.0 \\"x\\" \\u0001c"}',
      stages = '[{"stage":"preprocessed","sha256":"${'b'.repeat(64)}","size":7,"mimeType":"application/pdf","created":"2024-01-01T00:00:00.000Z"}]' WHERE id = $1`, [job.id]);
    const defaults = { processed: 86_400, canceled: 86_400, error: 259_200, paused: 259_200 };
    const write = textWriter();
    const q = parseODataQuery(`$filter=${encodeURIComponent("user eq 'bob'")}&$orderby=id desc`, JOB_FIELDS);
    const { page } = await listJobs(t.db, q, undefined, defaults);
    const row = (await getJob(t.db, Number(job.id)))!;
    expect(write(page)).toBe(JSON.stringify([presentJob(row, defaults)]));
    const picked = await listJobs(t.db, { ...q, select: ['retention', 'id', 'name', 'retention'] }, undefined, defaults);
    expect(write(picked.page, 7)).toBe(JSON.stringify({ results: [selectFields(presentJob(row, defaults), ['retention', 'id', 'name', 'retention'])], totalCount: 7 }));
    expect(JSON.parse(write(picked.page, 7))).toEqual({ results: [{ retention: { seconds: 90, custom: true, deleteAfter: expect.any(String) }, id: Number(job.id), name: 'Ünïcode "q" \\ \n\u0001c' }], totalCount: 7 });
    expect(JSON.parse(write(page))[0]).toMatchObject({ checkin: { type: 'api', source: 'ua/1.0 "x" \u0001c' }, task: { tid: 't \u0001s' }, stages: [{ stage: 'preprocessed', size: 7 }] });
    const jsonbOnly = await listJobs(t.db, { ...q, select: ['task', 'stages', 'checkin'] }, undefined, defaults);
    expect(write(jsonbOnly.page)).toBe(JSON.stringify([selectFields(presentJob(row, defaults), ['task', 'stages', 'checkin'])]));
    await t.db.query('DELETE FROM print_jobs WHERE id = $1', [job.id]);
  });

  it('writes listed timestamps as GET does, whatever the length of their fraction (PostgreSQL trims its zeros)', async () => {
    const job = await submitPrintJob(deps, { printer: 'p2', source: Readable.from([Buffer.from('x')]), mimeType: 'text/plain', creator: 'times', name: 't' });
    const defaults = { processed: 86_400, canceled: 86_400, error: 259_200, paused: 259_200 };
    const write = textWriter();
    const q = parseODataQuery(`$filter=${encodeURIComponent("user eq 'times'")}`, JOB_FIELDS);
    for (const [at, expected] of [['2024-02-29 23:59:59Z', '2024-02-29T23:59:59.000Z'], ['2024-01-01 00:00:00.5Z', '2024-01-01T00:00:00.500Z'],
      ['2024-01-01 00:00:00.07Z', '2024-01-01T00:00:00.070Z'], ['2024-01-01 00:00:00.123Z', '2024-01-01T00:00:00.123Z'],
      ['2024-01-01 00:00:00.1239Z', '2024-01-01T00:00:00.123Z'], ['1999-12-31 23:59:59.999999+02', '1999-12-31T21:59:59.999Z'],
      ['2030-06-01 12:00:00.000001Z', '2030-06-01T12:00:00.000Z']] as const) {
      await t.db.query(`UPDATE print_jobs SET status = 'processed', created = $2, updated = $2, finished = $2, next_attempt_at = $2 WHERE id = $1`, [job.id, at]);
      const row = (await getJob(t.db, Number(job.id)))!;
      const listed = write((await listJobs(t.db, q, undefined, defaults)).page);
      expect(listed).toBe(JSON.stringify([presentJob(row, defaults)]));
      expect(JSON.parse(listed)[0]).toMatchObject({ created: expected, updated: expected, finished: expected, nextAttempt: expected });
    }
    await t.db.query('DELETE FROM print_jobs WHERE id = $1', [job.id]);
  });

  it('orders a listing by the table columns, ties by id as a number', async () => {
    const { rows: ids } = await t.db.query<{ id: number }>(`INSERT INTO print_jobs (status, printer, creator, name, mime_type, size, blob_sha256, created, checkin)
      SELECT 'processed', 'p2', 'tie', 'j' || i, 'text/plain', 1, repeat('0', 64), '2024-01-01Z', jsonb_build_object('type', 'api', 'n', 12 - i)
      FROM generate_series(1, 12) AS i RETURNING id`);
    const write = textWriter();
    const list = async (options: string) => {
      const { page } = await listJobs(t.db, parseODataQuery(`$filter=${encodeURIComponent("user eq 'tie'")}&${options}`, JOB_FIELDS), undefined, { processed: 1, canceled: 1, error: 1, paused: 1 });
      return (JSON.parse(write(page)) as { id: number }[]).map((j) => j.id);
    };
    const desc = ids.map((r) => Number(r.id)).sort((a, b) => b - a);
    expect(await list('$orderby=created desc')).toEqual(desc);
    expect(await list('$orderby=created desc&$select=name,id')).toEqual(desc);
    expect(await list('$orderby=created asc,id asc&$select=id')).toEqual(desc.slice().reverse());
    expect(await list('$orderby=created desc&$skip=3&$top=4')).toEqual(desc.slice(3, 7));
    expect(await list('$orderby=created desc&$skip=20')).toEqual([]);
    expect(await list('$top=0')).toEqual([]);
    await t.db.query(`DELETE FROM print_jobs WHERE creator = 'tie'`);
  });

  it('starts in waitpreprocessing with a flow and follows redirects', async () => {
    await t.db.query(`UPDATE printers SET redirect = 'p2' WHERE name = 'p 1'`);
    const job = await submitPrintJob(deps, { printer: 'p 1', source: Readable.from([Buffer.from('x')]), mimeType: 'text/plain', creator: 'bob', flow: 'f' });
    expect(job.status).toBe('waitpreprocessing');
    expect(job.printer).toBe('p2');
    expect(job.redirected_from).toBe('p 1');
  });

  it('decides again when the printer is redirected or deleted while the document streams in', async () => {
    await t.db.query(`INSERT INTO printers (name, connection) VALUES ('p3', 'file:///tmp/z'), ('p4', 'file:///tmp/w'), ('p5', 'file:///tmp/v')`);
    // the change commits after the printer was looked up and before the job is inserted
    const changing = (sql: string) => Readable.from((async function* () {
      await t.db.query(sql);
      yield Buffer.from('late');
    })());
    const job = await submitPrintJob(deps, { printer: 'p3', source: changing(`UPDATE printers SET redirect = 'p4' WHERE name = 'p3'`), mimeType: 'text/plain', creator: 'carol' });
    expect(job.printer).toBe('p4');
    expect(job.redirected_from).toBe('p3');
    expect((await jobLog(t.db, Number(job.id))).map((l) => l.text)).toEqual(['submitted by carol (api), 4 bytes (sent to "p3", redirected) -> waitprocessing']);
    const { rows } = await t.db.query<{ data: { printer: string } }>(`SELECT data FROM outbox WHERE data->>'printer' = 'p4'`);
    expect(rows).toHaveLength(1);
    const before = (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM print_jobs')).rows[0]!.n;
    await expect(submitPrintJob(deps, { printer: 'p5', source: changing(`DELETE FROM printers WHERE name = 'p5'`), mimeType: 'text/plain', creator: 'carol' }))
      .rejects.toMatchObject({ code: 'PRINTER_NOT_FOUND' });
    expect((await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM print_jobs')).rows[0]!.n).toBe(before);
  });

  it('a job for a paused or disabled printer stores no dispatch wake-up (its resume wakes it); a redirected one wakes the target', async () => {
    await t.db.query(`INSERT INTO printers (name, connection, paused, enabled) VALUES ('held', 'file:///tmp/h', true, true), ('off', 'file:///tmp/o', false, false)`);
    await t.db.query(`INSERT INTO printers (name, connection, redirect) VALUES ('via held', 'file:///tmp/v2', 'p2')`);
    await t.db.query('DELETE FROM outbox');
    const submitTo = (printer: string) => submitPrintJob(deps, { printer, source: Readable.from([Buffer.from('x')]), mimeType: 'text/plain', creator: 'dave' });
    const held = await submitTo('held');
    const off = await submitTo('off');
    expect([held.status, off.status]).toEqual(['waitprocessing', 'waitprocessing']);
    expect((await t.db.query('SELECT * FROM outbox')).rows).toEqual([]);
    await submitTo('via held');
    const { rows } = await t.db.query<{ data: { printer: string } }>('SELECT data FROM outbox');
    expect(rows.map((r) => r.data.printer)).toEqual(['p2']);
  });

  it('concurrent submissions share statements: each job on its chain end with its log line and document, one wake-up per printer not held', async () => {
    await t.db.query(`INSERT INTO printers (name, connection) VALUES ('b1', 'file:///tmp/b1'), ('b2', 'file:///tmp/b2')`);
    await t.db.query(`INSERT INTO printers (name, connection, paused) VALUES ('b held', 'file:///tmp/b3', true)`);
    await t.db.query(`INSERT INTO printers (name, connection, redirect) VALUES ('b via', 'file:///tmp/b4', 'b2')`);
    await t.db.query('DELETE FROM outbox');
    // the statements the submissions send, seen through a wrapper of the database
    const texts: string[] = [];
    const db = recording(t.db, texts);
    const printers = ['b1', 'b2', 'b held', 'b via'];
    const n = 40;
    const jobs = await Promise.all(Array.from({ length: n }, (_, i) => submitPrintJob({ ...deps, db }, {
      printer: printers[i % 4]!, source: Readable.from([Buffer.from(`doc ${i}`)]), mimeType: 'text/plain', creator: `u${i}`, name: `j${i}`, priority: i % 2 ? 90 : 10,
    })));
    const inserts = texts.filter((x) => /INSERT INTO print_jobs/.test(x));
    expect(inserts.length).toBeLessThan(n);
    expect(inserts.some((x) => x.includes('unnest'))).toBe(true);
    // a small document goes with its printer's lookup: only the submissions to the redirected printer, whose
    // first statement found the chain ending elsewhere, looked their printer up on their own
    const lookups = texts.filter((x) => /print_flows/.test(x) && !/INSERT INTO print_jobs/.test(x));
    expect(lookups.length).toBeGreaterThan(0);
    expect(lookups.length).toBeLessThanOrEqual(n / 4);
    for (const [i, job] of jobs.entries()) {
      const sent = printers[i % 4]!;
      expect(job).toMatchObject({ name: `j${i}`, creator: `u${i}`, priority: i % 2 ? 90 : 10, status: 'waitprocessing',
        printer: sent === 'b via' ? 'b2' : sent, redirected_from: sent === 'b via' ? 'b via' : null });
      expect(Number(job.size)).toBe(`doc ${i}`.length);
      expect((await inlineDocument(t.db, job.id))?.toString()).toBe(`doc ${i}`);
      expect((await jobLog(t.db, Number(job.id))).map((l) => l.text)).toEqual([
        `submitted by u${i} (api), ${`doc ${i}`.length} bytes${sent === 'b via' ? ' (sent to "b via", redirected)' : ''} -> waitprocessing`]);
    }
    expect(new Set(jobs.map((j) => j.id)).size).toBe(n);
    expect(new Set(jobs.map((j) => j.seq)).size).toBe(n);
    const { rows } = await t.db.query<{ data: { printer: string } }>('SELECT data FROM outbox ORDER BY data->>\'printer\'');
    expect(rows.map((r) => r.data.printer)).toEqual(['b1', 'b2']);
  });

  it('with print.submissions.maxBatch 1, concurrent submissions each have statements of their own', async () => {
    await t.db.query(`INSERT INTO printers (name, connection) VALUES ('s1', 'file:///tmp/s1')`);
    const texts: string[] = [];
    const db = recording(t.db, texts);
    const n = 6;
    const jobs = await Promise.all(Array.from({ length: n }, (_, i) => submitPrintJob({ ...deps, db, batch: { maxInFlight: 1, maxBatch: 1 } }, {
      printer: 's1', source: Readable.from([Buffer.from(`doc ${i}`)]), mimeType: 'text/plain', creator: 'single', name: `s${i}`,
    })));
    expect(new Set(jobs.map((j) => j.id)).size).toBe(n);
    expect(texts.filter((x) => /INSERT INTO print_jobs/.test(x))).toHaveLength(n);
  });

  it('looks up several printers in one statement as submitTarget does one by one', async () => {
    await t.db.query(`INSERT INTO printers (name, connection, flow) VALUES ('d1', 'file:///tmp/d1', 'f'), ('d2', 'file:///tmp/d2', 'gone')`);
    await t.db.query(`INSERT INTO printers (name, connection, redirect) VALUES ('d3', 'file:///tmp/d3', 'd1')`);
    const asked = [{ printer: 'd1', flow: undefined }, { printer: 'd2', flow: undefined }, { printer: 'd3', flow: null }, { printer: 'nope', flow: undefined },
      { printer: 'd2', flow: 'f' }, { printer: 'd3', flow: undefined }];
    const one = await Promise.all(asked.map((a) => submitTarget(t.db, a.printer, a.flow)));
    expect(await submitTargets(t.db, asked)).toEqual(one);
    expect(one).toEqual([{ target: 'd1', flow: 'f', flowExists: true }, { target: 'd2', flow: 'gone', flowExists: false }, { target: 'd1', flow: null, flowExists: false },
      undefined, { target: 'd2', flow: 'f', flowExists: true }, { target: 'd1', flow: null, flowExists: false }]);
  });

  it('a shared statement leaves out a submission whose printer was redirected since it was looked up, and inserts the others', async () => {
    await t.db.query(`INSERT INTO printers (name, connection) VALUES ('c1', 'file:///tmp/c1'), ('c2', 'file:///tmp/c2'), ('c3', 'file:///tmp/c3')`);
    await t.db.query(`UPDATE printers SET redirect = 'c3' WHERE name = 'c2'`);
    await t.db.query(`UPDATE printers SET flow = 'f' WHERE name = 'c1'`);
    const item = (sentTo: string, target: string, flow: { ownFlow: boolean; flow: string | null; checkFlow: boolean } = { ownFlow: false, flow: null, checkFlow: false }) => ({
      sentTo, target, ...flow, logStart: `to ${target}`, document: Buffer.from(sentTo), wakeJobId: jobIdFor('print.dispatch', { printer: target }),
      job: { creator: 'e', owner: null, name: sentTo, fileName: null, mimeType: 'text/plain', size: 2, sha256: 'x',
        copies: 1, priority: 50, checkin: { type: 'api' }, task: null, retentionSec: null },
    });
    // c2 was looked up before its redirect: its chain ends at c3 now, not c2; an unknown printer and an unknown flow insert nothing
    const [a, b, c, d, e, f] = await insertSubmittedJobs(deps.outbox, t.db, [item('c1', 'c1'), item('c2', 'c2'), item('c2', 'c3'),
      item('c1', 'c1', { ownFlow: true, flow: null, checkFlow: true }), item('nope', 'nope'), item('c3', 'c3', { ownFlow: false, flow: 'gone', checkFlow: true })]);
    expect(a).toMatchObject({ printer: 'c1', redirected_from: null, flow: null, status: 'waitprocessing' });
    expect(b).toBeUndefined();
    expect(c).toMatchObject({ printer: 'c3', redirected_from: 'c2' });
    expect((await inlineDocument(t.db, c!.id))?.toString()).toBe('c2');
    expect((await jobLog(t.db, Number(c!.id))).map((l) => l.text)).toEqual(['to c3 (sent to "c2", redirected) -> waitprocessing']);
    // the printer's own flow, from the statement's lookup
    expect(d).toMatchObject({ printer: 'c1', flow: 'f', status: 'waitpreprocessing' });
    expect((await jobLog(t.db, Number(d!.id))).map((l) => l.text)).toEqual(['to c1 -> waitpreprocessing']);
    expect([e, f]).toEqual([undefined, undefined]);
    expect((await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM print_jobs WHERE printer IN ('c1', 'c2', 'c3')`)).rows[0]!.n).toBe(3);
  });

  it('refuses an unknown printer or flow, and an oversized document, storing nothing', async () => {
    const before = (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM print_jobs')).rows[0]!.n;
    await expect(submitPrintJob(deps, { printer: 'nope', source: Readable.from([Buffer.from('x')]), mimeType: 'text/plain', creator: 'a' })).rejects.toMatchObject({ code: 'PRINTER_NOT_FOUND' });
    await expect(submitPrintJob(deps, { printer: 'p2', flow: 'nope', source: Readable.from([Buffer.from('x')]), mimeType: 'text/plain', creator: 'a' })).rejects.toMatchObject({ code: 'FLOW_NOT_FOUND' });
    await expect(submitPrintJob(deps, { printer: 'p2', source: Readable.from([Buffer.alloc(2000)]), mimeType: 'text/plain', creator: 'a' })).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect((await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM print_jobs')).rows[0]!.n).toBe(before);
  });
});
