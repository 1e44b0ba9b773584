import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RepositoryFacet } from '../../../src/connectors/facets/repository.js';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import type { ApiResponse, TestClient } from '../../helpers/client.js';
import { pathExists } from '../../helpers/fs.js';
import { postEntry } from '../../helpers/repo.js';
import { expectAgreement } from './fs-agreement.js';

/**
 * Defect class: race (issue 20, item 8). `PUT …/{uuid}/content` on the
 * `files` service reads the entry (its path), then the backend checks that
 * path before it reads a byte. A rename of the document or of a collection
 * above it can move the files in between. The CI run that found it hit the
 * window by chance; here barriers put each step exactly there:
 * - the rename commits between the upload's read and its write;
 * - the rename has moved the files but not committed when the upload reads;
 * - the rename moves the files, the upload's check misses them, and the
 *   rename then fails (a descendant past PATH_MAX) and puts them back.
 * In every order the upload answers 204 and its bytes are the document's
 * content wherever the document now is; rows and disk agree.
 */
let rt: TestRuntime;
let api: TestClient;
let root: string;
let facet: RepositoryFacet;
const base = '/v1/services/files/repo';
const restore: (() => void)[] = [];

beforeAll(async () => {
  rt = await startTestRuntime();
  api = rt.client.withToken(await rt.token('alice', ['user']));
  root = path.join(rt.dataDir, 'files');
  facet = rt.services.repository.backend('files').backend;
});
afterEach(() => {
  for (const undo of restore.splice(0)) undo();
});
afterAll(async () => {
  await rt?.close();
});

/** A one-shot barrier: `open()` lets every `wait()` through. */
function barrier(): { open: () => void; wait: Promise<void> } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => { open = resolve; });
  return { open, wait };
}

/**
 * Holds the first call of the facet's `method` (before it runs, or after it
 * returned when `after`) until `release` opens; `reached` opens when it got
 * there. Later calls (the undo of a rename) pass straight through.
 */
function holdOnce<K extends 'stageContent' | 'rename'>(method: K, opts: { after?: boolean } = {}) {
  const reached = barrier();
  const release = barrier();
  const original = facet[method] as (...args: unknown[]) => Promise<unknown>;
  let first = true;
  (facet as unknown as Record<string, unknown>)[method] = async (...args: unknown[]) => {
    const hold = first;
    first = false;
    if (hold && !opts.after) { reached.open(); await release.wait; }
    const out = await original.apply(facet, args);
    if (hold && opts.after) { reached.open(); await release.wait; }
    return out;
  };
  restore.push(() => { (facet as unknown as Record<string, unknown>)[method] = original; });
  return { reached: reached.wait, release: release.open };
}

const mk = async (name: string, type?: 'document' | 'collection', parent?: string) => (await postEntry(api, base, name, type, parent)).uuid;
const put = (uuid: string, text: string) =>
  api.request('PUT', `${base}/${uuid}/content`, { body: text as never, headers: { 'content-type': 'text/plain' } });

async function expectContent(uuid: string, text: string, rel: string, note: string): Promise<void> {
  const now = await api.get(`${base}/${uuid}/content`);
  expect(now.status, note).toBe(200);
  expect(now.raw.toString(), note).toBe(text);
  expect((await api.get(`${base}/${uuid}`)).body.name, note).toBe(path.basename(rel));
  expect(await pathExists(path.join(root, rel)), `${note}: ${rel} on disk`).toBe(true);
}

function expectStatus(res: ApiResponse, status: number, what: string): void {
  expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(status);
}

describe('PUT content and a rename, step by step', () => {
  it('race: the parent collection is renamed (committed) between the upload reading the entry and writing it', async () => {
    const dir = await mk('window-a', 'collection');
    const doc = await mk('a.txt', 'document', dir);
    const upload = holdOnce('stageContent');
    const text = 'written across a rename of the parent';
    const w = put(doc, text);
    await upload.reached; // the upload has read the entry at window-a/a.txt
    expectStatus(await api.patch(`${base}/${dir}`, { name: 'window-a-moved' }), 200, 'rename');
    upload.release();
    expectStatus(await w, 204, 'PUT');
    await expectContent(doc, text, 'window-a-moved/a.txt', 'after');
    expect(await pathExists(path.join(root, 'window-a'))).toBe(false);
    await expectAgreement(rt, root);
  });

  it('race: the document itself is renamed (committed) between the upload reading the entry and writing it', async () => {
    const dir = await mk('window-b', 'collection');
    const doc = await mk('a.txt', 'document', dir);
    const upload = holdOnce('stageContent');
    const text = 'written across a rename of the document';
    const w = put(doc, text);
    await upload.reached;
    expectStatus(await api.patch(`${base}/${doc}`, { name: 'b.txt' }), 200, 'rename');
    upload.release();
    expectStatus(await w, 204, 'PUT');
    await expectContent(doc, text, 'window-b/b.txt', 'after');
    expect(await pathExists(path.join(root, 'window-b/a.txt'))).toBe(false);
    await expectAgreement(rt, root);
  });

  it('race: the upload reads the entry while the rename has moved the files but not committed', async () => {
    const dir = await mk('window-c', 'collection');
    const doc = await mk('a.txt', 'document', dir);
    const rename = holdOnce('rename', { after: true });
    const r = api.patch(`${base}/${dir}`, { name: 'window-c-moved' });
    await rename.reached; // moved on disk, rows still at window-c, row locks held
    const text = 'written while the rename was in flight';
    const w = put(doc, text);
    // the upload reaches the moved files and waits for the rename's row locks wherever it is
    await sleep(300);
    rename.release();
    expectStatus(await r, 200, 'rename');
    expectStatus(await w, 204, 'PUT');
    await expectContent(doc, text, 'window-c-moved/a.txt', 'after');
    await expectAgreement(rt, root);
  });

  it('race: the rename moves the files, the upload misses them, and the rename is undone (a descendant past PATH_MAX)', async () => {
    const top = await mk('w', 'collection');
    const doc = await mk('a.txt', 'document', top);
    // collections of 250 characters below w/ until the next one would not fit: a longer name for w is 400
    let parent = top;
    for (let depth = 0; depth < 40; depth++) {
      const res = await api.post(`${base}/${parent}`, { name: String.fromCharCode(97 + depth).repeat(250), type: 'collection' });
      if (res.status !== 200) break;
      parent = res.body.uuid as string;
    }
    expect(parent).not.toBe(top);
    const upload = holdOnce('stageContent');
    const rename = holdOnce('rename', { after: true });
    const text = 'written across a rename that was undone';
    const w = put(doc, text);
    await upload.reached; // the upload has read the entry at w/a.txt
    const r = api.patch(`${base}/${top}`, { name: 'W'.repeat(255) });
    await rename.reached; // w is moved on disk; its rows are locked
    upload.release(); // the upload's check finds no w/ and waits for the rename's locks
    await sleep(300);
    rename.release(); // the deepest collection is past PATH_MAX now: 400, w moved back under the locks
    const renamed = await r;
    expectStatus(renamed, 400, 'rename');
    expect(renamed.body.code).toBe('NAME_TOO_LONG');
    expectStatus(await w, 204, 'PUT');
    await expectContent(doc, text, 'w/a.txt', 'after');
    await expectAgreement(rt, root);
  });
});
