import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import type { ApiResponse, TestClient } from '../../helpers/client.js';
import { pathExists } from '../../helpers/fs.js';
import { postEntry } from '../../helpers/repo.js';
import { expectAgreement } from './fs-agreement.js';

/**
 * Defect class: a content write racing a delete (or a rename) of the same
 * entry on the `files` service. Whatever the order, the delete's answer holds:
 * neither row nor file is left (no file comes back, no entry without creator),
 * the writer gets a clean 404, and nobody gets a 500.
 */
let rt: TestRuntime;
let api: TestClient;
let root: string;
const base = '/v1/services/files/repo';
const ROUNDS = 8;

const mk = async (name: string, type?: 'document' | 'collection', parent?: string) => (await postEntry(api, base, name, type, parent)).uuid;
const rowExists = async (uuid: string) => (await rt.services.db.query('SELECT 1 FROM entries WHERE uuid = $1', [uuid])).rowCount > 0;

/** A body that arrives in pieces over `ms` milliseconds (so the other request lands mid-upload). */
function slowBody(text: string, ms: number): Readable {
  const pieces = 8;
  return Readable.from((async function* () {
    for (let i = 0; i < pieces; i++) {
      yield Buffer.from(text.slice((i * text.length) / pieces, ((i + 1) * text.length) / pieces));
      await sleep(ms / pieces);
    }
  })());
}

const put = (uuid: string, body: string | Readable) =>
  api.request('PUT', `${base}/${uuid}/content`, { body: body as never, headers: { 'content-type': 'text/plain' } });

function expectClean(res: ApiResponse, allowed: number[], what: string): void {
  expect(allowed, `${what}: ${res.status} ${JSON.stringify(res.body)}`).toContain(res.status);
}

// Both drivers: the embedded one has a single connection, where a statement outside the
// transaction would wait forever.
for (const db of ['postgres', 'pglite'] as const) {
  describe(db, () => {
    // PGlite compiles and migrates in the test process: up to a minute on a loaded machine
    beforeAll(async () => {
      rt = await startTestRuntime({ db });
      api = rt.client.withToken(await rt.token('alice', ['user']));
      root = path.join(rt.dataDir, 'files');
    }, 180_000);
    afterAll(async () => {
      await rt?.close();
    });

    describe('PUT content racing DELETE of the same entry', () => {
      const variants = [
        { label: 'document in the root, fast upload', slow: 0, nested: false, deleteParent: false },
        { label: 'document in a collection, slow upload', slow: 150, nested: true, deleteParent: false },
        { label: 'the collection holding the document is deleted', slow: 100, nested: true, deleteParent: true },
      ];
      for (const v of variants) {
        it(v.label, async () => {
          for (let round = 0; round < ROUNDS; round++) {
            const dir = v.nested ? await mk(`race-${v.slow}-${v.deleteParent}-${round}`, 'collection') : undefined;
            const name = `doc-${v.slow}-${v.deleteParent}-${round}.txt`;
            const doc = await mk(name, 'document', dir);
            expect((await put(doc, 'v0')).status).toBe(204);
            const rel = v.nested ? `race-${v.slow}-${v.deleteParent}-${round}/${name}` : name;
            const text = `round ${round} `.repeat(20_000);
            // spread the delete over the upload: early, middle, late
            const delay = (round % 4) * (v.slow ? v.slow / 3 : 3);
            const [w, d] = await Promise.all([
              put(doc, v.slow ? slowBody(text, v.slow) : text),
              sleep(delay).then(() => api.delete(`${base}/${v.deleteParent ? dir : doc}`)),
            ]);
            expectClean(w, [204, 404], `PUT round ${round}`);
            expectClean(d, [204], `DELETE round ${round}`);
            // the delete answered 204 last or first: either way the entry is gone, on disk and in the rows
            expect(await rowExists(doc), `row round ${round}`).toBe(false);
            expect(await pathExists(path.join(root, rel)), `file round ${round}`).toBe(false);
            await expectAgreement(rt, root, `round ${round}`);
            // and no listing brings it back as an entry without creator
            const all = await api.get(`${base}?scope=all&limit=500`);
            expect(all.body.embedded.entries.map((e: { name: string }) => e.name)).not.toContain(name);
          }
        });
      }

      it('a write that wins keeps its content until the delete; one that loses leaves the old state', async () => {
        for (let round = 0; round < ROUNDS; round++) {
          const doc = await mk(`ordered-${round}.txt`);
          const text = `ordered ${round}`;
          const w = await put(doc, text);
          expect(w.status).toBe(204);
          expect(await readFile(path.join(root, `ordered-${round}.txt`), 'utf8')).toBe(text);
          expect((await api.delete(`${base}/${doc}`)).status).toBe(204);
          const late = await put(doc, 'too late');
          expect(late.status).toBe(404);
          expect(await pathExists(path.join(root, `ordered-${round}.txt`))).toBe(false);
        }
        await expectAgreement(rt, root);
      });
    });

    describe('PUT content racing a rename', () => {
      it('the content follows the entry to its new name; nothing is left at the old one', async () => {
        for (let round = 0; round < ROUNDS; round++) {
          const dir = await mk(`ren-${round}`, 'collection');
          const doc = await mk('a.txt', 'document', dir);
          const text = `renamed ${round} `.repeat(10_000);
          // alternately rename the document itself and the collection above it
          const target = round % 2 === 0 ? { uuid: doc, name: 'b.txt' } : { uuid: dir, name: `ren-${round}-moved` };
          const [w, r] = await Promise.all([
            put(doc, slowBody(text, 120)),
            sleep((round % 3) * 40).then(() => api.patch(`${base}/${target.uuid}`, { name: target.name })),
          ]);
          expectClean(w, [204], `PUT round ${round}`);
          expectClean(r, [200], `PATCH round ${round}`);
          const now = await api.get(`${base}/${doc}/content`);
          expect(now.status).toBe(200);
          expect(now.raw.toString()).toBe(text);
          await expectAgreement(rt, root, `round ${round}`);
        }
      });
    });
  });
}
