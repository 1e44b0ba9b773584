import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import { rawJson, type TestClient } from '../../helpers/client.js';
import { postEntry, runCommand } from '../../helpers/repo.js';
import { diskPaths, expectAgreement } from './fs-agreement.js';

/**
 * Defect class: a write on the `files` service that fails must leave disk and
 * rows as they were. Bad metadata is refused before the disk is touched; a
 * database failure after the disk changed (provoked by triggers installed in
 * the test's own schema, some firing at COMMIT) is undone on disk.
 */
let rt: TestRuntime;
let api: TestClient;
let root: string;
const base = '/v1/services/files/repo';

const mk = async (name: string, type?: 'document' | 'collection', parent?: string) => (await postEntry(api, base, name, type, parent)).uuid;

const deep = (levels: number) => `${'{"d":'.repeat(levels)}1${'}'.repeat(levels)}`;
/**
 * The code each bad body gets: NUL and deep nesting are refused by the JSON body
 * middleware for every route (INVALID_CHARACTER, JSON_TOO_DEEP past 64 levels);
 * what passes it but cannot be stored as metadata fails the schema.
 */
const codeFor = (label: string) => (label.startsWith('NUL') ? 'INVALID_CHARACTER' : label.startsWith('5,000') ? 'JSON_TOO_DEEP' : 'VALIDATION_FAILED');
const BAD_METADATA: [string, string][] = [
  ['NUL in a value', JSON.stringify({ note: 'a\u0000b' })],
  ['NUL in a nested key', JSON.stringify({ outer: { 'k\u0000': 1 } })],
  ['NUL in an array item', JSON.stringify({ list: ['ok', ['x\u0000']] })],
  ['a lone surrogate', '{"note":"\\ud800"}'],
  ['a lone low surrogate in a key', '{"\\udc00x":1}'],
  ['5,000 levels of nesting', deep(5000)],
  ['33 levels of nesting', deep(33)],
  ['over 256 KiB', JSON.stringify({ big: 'x'.repeat(300 * 1024) })],
];

// Both drivers: the embedded one has a single connection, where a statement outside the
// transaction would wait forever.
for (const db of ['postgres', 'pglite'] as const) {
  describe(db, () => {
    // PGlite compiles and migrates in the test process: up to a minute on a loaded machine
    beforeAll(async () => {
      rt = await startTestRuntime({ db });
      api = rt.client.withToken(await rt.token('alice', ['user']));
      root = path.join(rt.dataDir, 'files');
      // Rows whose name or metadata asks for it fail: at once, or only at COMMIT (deferred constraint trigger).
      await rt.services.db.exec(`
        CREATE FUNCTION explode() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN RAISE EXCEPTION 'provoked failure'; END $$;
        CREATE TRIGGER explode_now BEFORE UPDATE ON entries FOR EACH ROW
          WHEN (NEW.name LIKE 'explode-now%' OR NEW.metadata ? 'explodeNow') EXECUTE FUNCTION explode();
        CREATE CONSTRAINT TRIGGER explode_at_commit AFTER INSERT OR UPDATE ON entries DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
          WHEN (NEW.name LIKE 'explode-commit%' OR NEW.metadata ? 'explodeAtCommit') EXECUTE FUNCTION explode();
      `);
    }, 180_000);
    afterAll(async () => {
      await rt?.close();
    });
    beforeEach(async () => {
      await expectAgreement(rt, root, 'before the test');
    });

    describe('metadata the database cannot store is a 400, and nothing changes', () => {
      it.each(BAD_METADATA)('create with %s: 400, no file', async (label, metadata) => {
        const before = await diskPaths(root);
        const res = await api.request('POST', base, rawJson(`{"name":"new-doc.txt","metadata":${metadata}}`));
        expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(400);
        expect(res.body.code).toBe(codeFor(label));
        expect(await diskPaths(root)).toEqual(before);
        await expectAgreement(rt, root);
      });

      it.each(BAD_METADATA)('rename with %s (PATCH and PUT): 400, same file, same entry', async (label, metadata) => {
        const dir = await mk(`dir ${label}`, 'collection');
        const doc = await mk('keep.txt', 'document', dir);
        for (const method of ['PATCH', 'PUT']) {
          const res = await api.request(method, `${base}/${doc}`, rawJson(`{"name":"renamed.txt","metadata":${metadata}}`));
          expect(res.status, `${method} ${JSON.stringify(res.body).slice(0, 300)}`).toBe(400);
          const collection = await api.request(method, `${base}/${dir}`, rawJson(`{"name":"renamed dir","metadata":${metadata}}`));
          expect(collection.status, method).toBe(400);
        }
        const again = await api.get(`${base}/${doc}`);
        expect(again.status).toBe(200);
        expect(again.body).toMatchObject({ name: 'keep.txt', creator: 'alice' });
        await expectAgreement(rt, root);
      });

      it('an owner with NUL is refused before the rename', async () => {
        const doc = await mk('owned.txt');
        const res = await api.request('PATCH', `${base}/${doc}`, rawJson('{"name":"owned-2.txt","owner":"al\\u0000ice"}'));
        expect(res.status).toBe(400);
        expect((await api.get(`${base}/${doc}`)).body.name).toBe('owned.txt');
        await expectAgreement(rt, root);
      });

      it('PATCH merges may not grow metadata past the limit: the second half is refused', async () => {
        const doc = await mk('growing.txt');
        const half = 'y'.repeat(150 * 1024);
        expect((await api.patch(`${base}/${doc}`, { metadata: { a: half } })).status).toBe(200);
        const res = await api.patch(`${base}/${doc}`, { name: 'grown.txt', metadata: { b: half } });
        expect(res.status).toBe(400);
        expect(res.body.details.issues[0].path).toBe('body.metadata');
        expect((await api.get(`${base}/${doc}`)).body).toMatchObject({ name: 'growing.txt' });
        await expectAgreement(rt, root);
      });

      it('metadata at the limits is stored', async () => {
        const doc = await mk('limits.txt');
        const res = await api.request('PATCH', `${base}/${doc}`, rawJson(`{"name":"limits-2.txt","metadata":{"deep":${deep(30)},"emoji":"\\ud83d\\ude00","nul":"\\\\u0000 as text"}}`));
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.body.metadata.emoji).toBe('😀');
        await expectAgreement(rt, root);
      });
    });

    describe('a database failure after the disk changed is undone on disk', () => {
      for (const when of ['now', 'commit'] as const) {
        const metaKey = when === 'now' ? 'explodeNow' : 'explodeAtCommit';

        it(`rename of a document and of a collection (failure ${when})`, async () => {
          const dir = await mk(`undo-rename-${when}`, 'collection');
          const doc = await mk('inner.txt', 'document', dir);
          await api.request('PUT', `${base}/${doc}/content`, { body: 'kept', headers: { 'content-type': 'text/plain' } });
          for (const [uuid, name] of [[doc, 'moved.txt'], [dir, `undo-renamed-${when}`]] as const) {
            const res = await api.patch(`${base}/${uuid}`, { name, metadata: { [metaKey]: true } });
            expect(res.status).toBe(500);
            await expectAgreement(rt, root, `${when} ${name}`);
          }
          // a name that fails the row update itself
          const byName = await api.patch(`${base}/${doc}`, { name: `explode-${when}.txt` });
          expect(byName.status).toBe(500);
          expect((await api.get(`${base}/${doc}`)).body).toMatchObject({ name: 'inner.txt', creator: 'alice' });
          expect(await readFile(path.join(root, `undo-rename-${when}`, 'inner.txt'), 'utf8')).toBe('kept');
          await expectAgreement(rt, root);
        });

        it(`create of a document and of a collection (failure ${when})`, async () => {
          const dir = await mk(`undo-create-${when}`, 'collection');
          for (const type of ['document', 'collection']) {
            for (const parent of [undefined, dir]) {
              const res = await api.post(parent ? `${base}/${parent}` : base, { name: `explode-${when}-${type}`, type });
              expect(res.status).toBe(500);
              await expectAgreement(rt, root, `${when} ${type}`);
            }
          }
        });

        it(`move and copy commands (failure ${when})`, async () => {
          const src = await mk(`cmd-src-${when}`, 'collection');
          const doc = await mk('paper.txt', 'document', src);
          await api.request('PUT', `${base}/${doc}/content`, { body: 'paper', headers: { 'content-type': 'text/plain' } });
          const dst = await mk(`cmd-dst-${when}`, 'collection');
          for (const [command, parameters] of [
            ['move', { source: doc, target: dst, name: `explode-${when}.txt` }],
            ['move', { source: src, target: dst, name: `explode-${when}-dir` }],
            ['copy', { source: doc, target: dst, name: `explode-${when}.txt` }],
            ['copy', { source: src, target: dst, name: `explode-${when}-dir` }],
          ] as const) {
            const done = await runCommand(api, base, command, parameters);
            expect(done.state, `${command} ${parameters.name}`).toBe('failure');
            await expectAgreement(rt, root, `${command} ${parameters.name}`);
          }
          expect(await readFile(path.join(root, `cmd-src-${when}`, 'paper.txt'), 'utf8')).toBe('paper');
        });
      }

      it('a create racing a create of the same name: one wins, no orphan, no anonymous entry', async () => {
        for (let round = 0; round < 5; round++) {
          const name = `race-${round}.txt`;
          const results = await Promise.all([1, 2, 3, 4].map(() => api.post(base, { name })));
          expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409]);
          await expectAgreement(rt, root, name);
        }
      });
    });
  });
}
