import { createHash, randomUUID } from 'node:crypto';
import { mkdir, open, rename, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identity, resumeClaim, takeFile, type TakeContext } from '../../../src/connectors/hotfolder/take-file.js';
import { folderSchema } from '../../../src/connectors/hotfolder/options.js';
import { intakeFileStore } from '../../../src/connectors/lifecycle/intake-file-store.js';
import { stateStore } from '../../../src/connectors/lifecycle/state-store.js';
import { outboxPort } from '../../../src/connectors/ports.js';
import { workPort } from '../../../src/runtime/work-port.js';
import { createLogger } from '../../../src/logging/logger.js';
import { pathExists } from '../../helpers/fs.js';
import { startTestRuntime, TEST_SERVICES, type TestRuntime } from '../../helpers/runtime.js';

/**
 * What a crash leaves between the steps of taking a file, finished by
 * `resumeClaim` as a restarted (or taking-over) intake does, against the
 * runtime's real services (PostgreSQL, the store, the task service). The
 * claim is never marked "stored": the document under the claim's uuid is
 * the record that the file was stored (docs/design/hot-folder.md).
 */
let rt: TestRuntime;
let c: TakeContext;
let dir: string;

const claimRow = async (id: string) => (await rt.services.db.query<{ state: string; doc_name: string | null; stored: Date | null }>(
  'SELECT state, doc_name, stored FROM intake_files WHERE id = $1::bigint', [id])).rows[0];

/** A file in the folder, claimed as `takeFile` claims it (hash, ids), and nothing more. */
async function claimed(name: string, body: string) {
  const file = path.join(dir, name);
  await writeFile(file, body);
  const st = await stat(file);
  const { claim } = await c.ports.claims.claim({
    source: dir, name, size: st.size, mtimeMs: st.mtimeMs, ino: identity(st),
    sha256: createHash('sha256').update(body).digest('hex'), docUuid: randomUUID(), tid: randomUUID(),
  });
  return claim;
}

beforeAll(async () => {
  rt = await startTestRuntime({
    overrides: { services: { ...TEST_SERVICES, demo: { type: 'mock', options: { tasks: { itemMs: 0 } } } } },
  });
  dir = path.join(rt.dataDir, 'resume-in');
  await mkdir(path.join(dir, 'done'), { recursive: true });
  await mkdir(path.join(dir, 'error'), { recursive: true });
  const s = rt.services;
  c = {
    sid: 'hot', dir, creator: 'hotfolder:hot',
    folder: folderSchema.parse({ path: dir, store: { service: 'store', collection: 'resumed' }, task: { service: 'demo', name: '{stem}', start: true } }),
    ports: {
      log: createLogger('silent'), outbox: outboxPort(s.outbox, s.db), state: stateStore(s.db, 'hot'),
      claims: intakeFileStore(s.db, 'hot'), work: workPort(s), metrics: { taken() {}, failed() {} }, messages: s.messages,
    },
  };
});
afterAll(async () => {
  await rt?.close();
});

describe('hot folder: finishing what a crash left', () => {
  it('stored, moved to done/, not finished: the claim is finished with its document, which stays, and its task is made and started', async () => {
    const claim = await claimed('after-move.txt', 'stored before the crash');
    // stored as `finishClaim` stores it: through the open file
    const fh = await open(path.join(dir, claim.name));
    const doc = await c.ports.work.storeDocument({
      service: 'store', uuid: claim.docUuid!, fresh: true, collection: 'resumed', name: claim.name,
      open: () => fh.createReadStream({ start: 0, autoClose: false }), fd: fh.fd, sha256: claim.sha256, metadata: {}, creator: c.creator, owner: null,
    }).finally(() => fh.close());
    await rename(path.join(dir, claim.name), path.join(dir, 'done', claim.name)); // the crash came after the move

    expect(await resumeClaim(c, claim)).toEqual({ outcome: 'changed' });
    expect(await claimRow(claim.id)).toMatchObject({ state: 'done', doc_name: doc.name });
    expect((await claimRow(claim.id))!.stored).not.toBeNull();
    expect(await c.ports.work.storedDocument('store', claim.docUuid!, claim.sha256)).toMatchObject({ uuid: claim.docUuid });
    const task = await rt.services.db.query<{ status: string }>('SELECT status FROM tasks WHERE tid = $1', [claim.tid]);
    expect(task.rows[0]?.status).not.toBe('idle');
  });

  it('claimed, not stored, the file gone: the claim is forgotten and nothing of it exists', async () => {
    const claim = await claimed('gone-before-store.txt', 'never stored');
    await rename(path.join(dir, claim.name), path.join(rt.dataDir, 'elsewhere.txt'));
    expect(await resumeClaim(c, claim)).toEqual({ outcome: 'changed' });
    expect(await claimRow(claim.id)).toBeUndefined();
    expect(await c.ports.work.storedDocument('store', claim.docUuid!, claim.sha256)).toBeUndefined();
    expect((await rt.services.db.query('SELECT 1 FROM tasks WHERE tid = $1', [claim.tid])).rows).toHaveLength(0);
  });

  it('claimed, the file still there: taken to the end once, with the claim\'s ids; taking it again finds it done', async () => {
    const claim = await claimed('still-here.txt', 'resumed in place');
    const r = await resumeClaim(c, claim);
    expect(r.outcome).toBe('taken');
    expect(await claimRow(claim.id)).toMatchObject({ state: 'done', doc_name: 'still-here.txt' });
    expect(await pathExists(path.join(dir, 'done', 'still-here.txt'))).toBe(true);
    expect(await c.ports.work.storedDocument('store', claim.docUuid!, claim.sha256)).toMatchObject({ name: 'still-here.txt' });
    // a fresh take of a new file at the same name is a new claim, not this one
    await writeFile(path.join(dir, 'still-here.txt'), 'a second file');
    const st = await stat(path.join(dir, 'still-here.txt'));
    const again = await takeFile(c, 'still-here.txt', { size: st.size, mtimeMs: st.mtimeMs, ino: identity(st) });
    expect(again.outcome).toBe('taken');
    expect(again.outcome === 'taken' && again.claim.id).not.toBe(claim.id);
  });
});
