import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BlobStore } from '../../../../src/blobs/blob-store.js';
import { createOutbox } from '../../../../src/outbox/outbox.js';
import { submitPrintJob } from '../../../../src/areas/print/jobs/submit-print-job.js';
import { getJob } from '../../../../src/areas/print/jobs/store/job-reads.js';
import { JOB_COLUMN_NAMES } from '../../../../src/areas/print/jobs/store/job-row.js';
import { LISTED_FIELD_NAMES, LISTING_COLUMN_FIELDS, listJobs } from '../../../../src/areas/print/jobs/store/listing.js';
import { jobListWriter, presentJob, selectFields } from '../../../../src/areas/print/jobs/present.js';
import { JOB_FIELDS } from '../../../../src/areas/print/jobs/job-fields.js';
import { parseODataQuery } from '../../../../src/query/odata.js';
import { bothDrivers, type TestDatabase } from '../../../helpers/databases.js';
import { tempDir } from '../../../helpers/fs.js';

/**
 * Migration 017's `listing` column: each job's listed JSON text, written by a
 * trigger with the row. A listing without `$select` reads it; these tests hold
 * it to presentJob and to the text the listing builds field by field (the
 * `$select` path, listing.ts LISTED_FIELDS), after every kind of write.
 */
const DEFAULTS = { processed: 86_400, canceled: 86_400, error: 259_200, paused: 259_200 };
const ALL_FIELDS = ['id', 'status', 'printer', 'user', 'owner', 'name', 'fileName', 'mimeType', 'size', 'copies', 'priority', 'pages', 'checkin', 'task',
  'flow', 'redirectedFrom', 'message', 'created', 'updated', 'finished', 'keepTempfiles', 'stages', 'retention', 'attempts', 'nextAttempt'];

describe.each(bothDrivers())('the listing column on %s', (_name, open) => {
  let t: TestDatabase;
  let dir: string;
  let deps: Parameters<typeof submitPrintJob>[0];
  beforeAll(async () => {
    t = await open();
    dir = await tempDir('wcr-listing-column-');
    const blobs = new BlobStore(dir);
    await blobs.init();
    deps = { db: t.db, blobs, outbox: createOutbox(), maxBytes: 1000, batch: { maxInFlight: 1, maxBatch: 64 } };
    await t.db.query(`INSERT INTO printers (name, connection) VALUES ('p ü''/1', 'file:///tmp/x'), ('p2', 'file:///tmp/y')`);
  });
  afterAll(async () => {
    await t.drop();
  });

  /** The listing of `creator`'s jobs three ways: from the column, built field by field ($select of every field), and presentJob of each row. */
  async function threeWays(creator: string) {
    const q = parseODataQuery(`$filter=${encodeURIComponent(`user eq '${creator}'`)}&$orderby=id`, JOB_FIELDS);
    const column = String(jobListWriter()((await listJobs(t.db, q, undefined, DEFAULTS)).page));
    const built = String(jobListWriter()((await listJobs(t.db, { ...q, select: ALL_FIELDS }, undefined, DEFAULTS)).page));
    const { rows } = await t.db.query<{ id: string }>('SELECT id FROM print_jobs WHERE creator = $1 ORDER BY id', [creator]);
    const presented = JSON.stringify(await Promise.all(rows.map(async (r) => selectFields(presentJob((await getJob(t.db, Number(r.id)))!, DEFAULTS), ALL_FIELDS))));
    return { column, built, presented };
  }

  it('names every column of print_jobs but listing in JOB_COLUMN_NAMES, and the fields it holds are the listing\'s first ones', async () => {
    const { rows } = await t.db.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'print_jobs' ORDER BY ordinal_position`);
    expect(rows.map((r) => r.column_name).filter((c) => c !== 'listing').sort()).toEqual([...JOB_COLUMN_NAMES].sort());
    expect(rows.map((r) => r.column_name)).toContain('listing');
    expect(LISTING_COLUMN_FIELDS).toEqual(ALL_FIELDS.slice(0, ALL_FIELDS.indexOf('stages') + 1));
    // whole-job readers never fetch it
    const job = await submitPrintJob(deps, { printer: 'p2', source: Readable.from([Buffer.from('x')]), mimeType: 'text/plain', creator: 'cols', name: 'c' });
    expect(Object.keys(job).sort()).toEqual([...JOB_COLUMN_NAMES].sort());
    expect(Object.keys((await getJob(t.db, Number(job.id)))!).sort()).toEqual([...JOB_COLUMN_NAMES].sort());
    // a listing's fields are presentJob's, in its order
    expect(LISTED_FIELD_NAMES).toEqual(ALL_FIELDS);
    expect(Object.keys(presentJob(job, DEFAULTS))).toEqual(ALL_FIELDS);
  });

  it('is the job as presented after the insert and after every kind of update, for rows of every shape', async () => {
    const names = ['plain', 'Ünïcode "q" \\ \n\u0001c', "it's / a \t name", '✓ emoji 😀', ''];
    for (const [i, name] of names.entries()) {
      await submitPrintJob(deps, { printer: i % 2 ? 'p2' : "p ü'/1", source: Readable.from([Buffer.from('x'.repeat(i + 1))]), mimeType: 'text/plain', creator: 'shapes', name });
    }
    let ways = await threeWays('shapes');
    expect(ways.column).toBe(ways.presented);
    expect(ways.built).toBe(ways.presented);
    const updates = [
      `status = 'processed', finished = '2024-02-29 23:59:59Z', updated = '2024-02-29 23:59:58.5Z', pages = 3`,
      `message = 'line "1"\nline 2 \u0001', owner = 'o''wner', file_name = 'a/b c.pdf', flow = 'fl ö', redirected_from = 'p 0'`,
      `task = '{"sid":"s","tid":"t \\u0001s","item":"i"}', checkin = '{"type":"api","source":"ua/1.0 \\"x\\""}', keep_tempfiles = true`,
      `stages = '[{"stage":"preprocessed","sha256":"${'b'.repeat(64)}","size":7,"mimeType":"application/pdf","created":"2024-01-01T00:00:00.000Z"}]'`,
      `status = 'paused', finished = NULL, created = '1999-12-31 23:59:59.999999+02', updated = '2030-06-01 12:00:00.000001Z', retention_sec = 5`,
      `status = 'postponed', attempts = 3, next_attempt_at = '2026-01-01 00:00:00.07Z', copies = 12, priority = 99, size = 123456789012`,
      `printer = 'p2', stages = '[]', task = NULL, message = NULL, owner = NULL, file_name = NULL, pages = NULL, name = 'renamed'`,
    ];
    for (const set of updates) {
      await t.db.query(`UPDATE print_jobs SET ${set} WHERE creator = 'shapes'`);
      ways = await threeWays('shapes');
      expect(ways.column, set).toBe(ways.presented);
      expect(ways.built, set).toBe(ways.presented);
    }
  });

  it('falls back to building the text when a row has none', async () => {
    await submitPrintJob(deps, { printer: 'p2', source: Readable.from([Buffer.from('x')]), mimeType: 'text/plain', creator: 'bare', name: 'n' });
    await t.db.query('ALTER TABLE print_jobs DISABLE TRIGGER print_jobs_listing');
    try {
      await t.db.query(`UPDATE print_jobs SET listing = NULL, status = 'canceled', finished = now() WHERE creator = 'bare'`);
      expect((await t.db.query(`SELECT listing FROM print_jobs WHERE creator = 'bare'`)).rows).toEqual([{ listing: null }]);
      const ways = await threeWays('bare');
      expect(ways.column).toBe(ways.presented);
      // and a listing without $select reads the column when there is one: what is stored is what is listed
      await t.db.query(`UPDATE print_jobs SET listing = '{"id":0,"stored":true' WHERE creator = 'bare'`);
      expect(JSON.parse((await threeWays('bare')).column)).toEqual([expect.objectContaining({ id: 0, stored: true, attempts: 0 })]);
    } finally {
      await t.db.query('ALTER TABLE print_jobs ENABLE TRIGGER print_jobs_listing');
    }
  });
});
