import { rename as fsRename } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import type { ApiResponse, TestClient } from '../../helpers/client.js';
import { runCommand } from '../../helpers/repo.js';
import { expectAgreement } from './fs-agreement.js';

/**
 * Defect class: paths past the OS limits on the `files` service answered 500.
 * A name over 255 bytes (even under 255 characters) is 400 INVALID_NAME; a
 * path past PATH_MAX, reached by nesting, by renaming or moving a collection
 * above deep entries, or by copying into a deep place, is 400 NAME_TOO_LONG
 * (a command fails with that code) and nothing changes on disk or in rows.
 */
let rt: TestRuntime;
let api: TestClient;
let root: string;
const base = '/v1/services/files/repo';
const long = (c: string, n = 250) => c.repeat(n);

beforeAll(async () => {
  rt = await startTestRuntime();
  api = rt.client.withToken(await rt.token('alice', ['user']));
  root = path.join(rt.dataDir, 'files');
});
afterAll(async () => {
  await rt?.close();
});

const create = (name: string, type: 'document' | 'collection', parent?: string) =>
  api.post(parent ? `${base}/${parent}` : base, { name, type });

function expectTooLong(res: ApiResponse, what: string): void {
  expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(400);
  expect(res.body.code, what).toBe('NAME_TOO_LONG');
}

/** Collections `top/…` nested until the file system says no; returns the chain (top first). */
async function deepChain(top: string): Promise<string[]> {
  const chain: string[] = [];
  for (let depth = 0; depth < 40; depth++) {
    const res = await create(depth === 0 ? top : long(String.fromCharCode(97 + (depth % 26))), 'collection', chain.at(-1));
    if (res.status !== 200) {
      expectTooLong(res, `collection at depth ${depth}`);
      expectTooLong(await create('d.txt'.padStart(250, 'd'), 'document', chain.at(-1)), `document at depth ${depth}`);
      return chain;
    }
    chain.push(res.body.uuid as string);
  }
  throw new Error('never reached the path limit');
}

/** The longest document name that still fits in `parent` (every longer one must be a 400, never a 500). */
async function fillToTheLimit(parent: string): Promise<string> {
  let lo = 1;
  let hi = 255;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    const probe = await create('p'.repeat(mid), 'document', parent);
    if (probe.status === 200) {
      expect((await api.delete(`${base}/${probe.body.uuid}`)).status).toBe(204);
      lo = mid;
    } else {
      expectTooLong(probe, `probe ${mid}`);
      hi = mid - 1;
    }
  }
  const res = await create('p'.repeat(lo), 'document', parent);
  expect(res.status).toBe(200);
  return res.body.uuid as string;
}

describe('names over 255 bytes', () => {
  it('are 400 INVALID_NAME on create, rename and copy, even under 255 characters', async () => {
    const doc = (await create('plain.txt', 'document')).body.uuid as string;
    for (const name of ['é'.repeat(200), '😀'.repeat(64) + 'x', '中'.repeat(86)]) {
      expect(name.length).toBeLessThan(256);
      for (const type of ['document', 'collection'] as const) {
        const res = await create(name, type);
        expect(res.status, `${type} ${name.length}`).toBe(400);
        expect(res.body.code).toBe('INVALID_NAME');
      }
      expect((await api.patch(`${base}/${doc}`, { name })).status).toBe(400);
      expect((await api.put(`${base}/${doc}`, { name })).status).toBe(400);
      const copy = await runCommand(api, base, 'copy', { source: doc, target: (await api.get(base)).body.uuid, name });
      expect(copy.state).not.toBe('success');
    }
    expect((await api.get(`${base}/${doc}`)).body.name).toBe('plain.txt');
    await expectAgreement(rt, root);
  });
});

describe('paths over PATH_MAX', () => {
  let chain: string[];
  let deepest: string;

  it('nesting past the limit: 400 NAME_TOO_LONG for collections and documents, nothing half-made', async () => {
    chain = await deepChain('nest');
    expect(chain.length).toBeGreaterThan(10);
    deepest = await fillToTheLimit(chain.at(-1)!);
    await expectAgreement(rt, root);
  });

  it('renaming a collection above deep entries past the limit: 400, the old name stays', async () => {
    for (const [uuid, name] of [[chain[0]!, long('N', 255)], [chain[1]!, long('M', 255)]] as const) {
      for (const method of ['patch', 'put'] as const) {
        expectTooLong(await api[method](`${base}/${uuid}`, { name }), `${method} ${name[0]}`);
      }
    }
    expect((await api.get(`${base}/${chain[0]}`)).body.name).toBe('nest');
    expect((await api.get(`${base}/${deepest}`)).status).toBe(200);
    // the deepest document itself: one byte more does not fit
    const name = (await api.get(`${base}/${deepest}`)).body.name as string;
    expectTooLong(await api.patch(`${base}/${deepest}`, { name: `${name}p` }), 'rename of the deepest document');
    await expectAgreement(rt, root);
  });

  it('moving the deep tree lower or copying into the deepest collection fails the command with NAME_TOO_LONG', async () => {
    const lower = (await create('lower-level', 'collection')).body.uuid as string;
    const move = await runCommand(api, base, 'move', { source: chain[0], target: lower });
    expect(move).toMatchObject({ state: 'failure', error: { code: 'NAME_TOO_LONG' } });
    const renaming = await runCommand(api, base, 'move', { source: chain[0], target: (await api.get(base)).body.uuid, name: long('R', 255) });
    expect(renaming).toMatchObject({ state: 'failure', error: { code: 'NAME_TOO_LONG' } });
    const source = (await create(long('s', 255), 'document')).body.uuid as string;
    const copy = await runCommand(api, base, 'copy', { source, target: chain.at(-1) });
    expect(copy).toMatchObject({ state: 'failure', error: { code: 'NAME_TOO_LONG' } });
    expect((await api.get(`${base}/${deepest}`)).status).toBe(200);
    await expectAgreement(rt, root);
  });

  it('a tree pushed past the limit by a local rename still lists (200), without the unreachable part', async () => {
    const admin = rt.client.withToken(await rt.token('root-admin', ['admin'])); // entries found on disk have no creator
    const moved = path.join(root, long('L', 255));
    await fsRename(path.join(root, 'nest'), moved);
    try {
      const all = await admin.get(`${base}?scope=all&limit=500`);
      expect(all.status).toBe(200);
      const top = all.body.embedded.entries.find((e: { name: string }) => e.name === long('L', 255));
      expect(top?.type).toBe('collection');
      expect((await admin.get(`${base}/${top.uuid}/children`)).status).toBe(200);
    } finally {
      // rm -rf cannot remove a tree deeper than PATH_MAX by path: shorten it again for the clean-up
      await fsRename(moved, path.join(root, 'nest'));
    }
  });
});
