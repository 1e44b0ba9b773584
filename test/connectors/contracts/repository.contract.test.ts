import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { COMMAND_NAMES, type EntryRow, type RepositoryFacet } from '../../../src/connectors/connector.js';
import { AppError } from '../../../src/errors/app-error.js';
import { readAll } from '../../helpers/streams.js';
import { exampleInstances } from './instances.js';

/**
 * The contract of the `repository` facet, run against every registered
 * connector type's examples that have one: what it declares is consistent,
 * bytes written come back the same (whole, by range, through contentPath),
 * survive copy, rename and move, and a refused write changes nothing.
 */
const { instances, cleanup } = await exampleInstances('repository');
afterAll(cleanup);

it('the built-in repositories take part', () => {
  const types = instances.map((i) => i.connector.type);
  expect(types).toContain('store');
  expect(types).toContain('filesystem');
});

for (const { label, connector } of instances) {
  describe(`repository facet: ${label}`, () => {
    const backend: RepositoryFacet = connector.repository!;
    const root: EntryRow = {
      uuid: randomUUID(), sid: 'contract', parent: null, name: '', type: 'collection', metadata: {}, creator: null, owner: null,
      created: new Date(), modified: new Date(), size: null, mime_type: null, sha256: null, content_version: null, path: '',
      preview_sha256: null, thumb_sha256: null, preview_of: null, preview_error: null,
    };
    /** Creates through the backend and returns the row the service would store. */
    const create = async (parent: EntryRow, entryName: string, type: EntryRow['type']): Promise<EntryRow> => {
      const draft: EntryRow = { ...root, uuid: randomUUID(), parent: parent.uuid, name: entryName, type, path: null };
      const made = await backend.create(draft, parent);
      return { ...draft, path: made.path ?? null };
    };
    const write = async (entry: EntryRow, content: string, max = 0): Promise<EntryRow> => {
      const w = await backend.writeContent(entry, Readable.from([Buffer.from(content)]), max);
      expect(w.size).toBe(Buffer.byteLength(content));
      return { ...entry, size: w.size, sha256: w.sha256, content_version: w.sha256, path: w.path ?? entry.path };
    };

    it('declares what it does: known commands, a deleteContent when content deletion is offered, sync with refresh', () => {
      expect(backend.commands.every((c) => (COMMAND_NAMES as readonly string[]).includes(c))).toBe(true);
      expect(new Set(backend.commands).size).toBe(backend.commands.length);
      if (backend.contentDelete) expect(backend.deleteContent).toBeTypeOf('function');
      expect(typeof backend.sync).toBe(typeof backend.refresh);
    });

    it('write, read whole and by range, and through contentPath', async () => {
      const doc = await write(await create(root, 'a.txt', 'document'), 'hello contract');
      expect(doc.sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(await readAll(await backend.openContent(doc))).toBe('hello contract');
      expect(await readAll(await backend.openContent(doc, { start: 6, end: 13 }))).toBe('contract');
      expect(await readFile((await backend.contentPath(doc))!, 'utf8')).toBe('hello contract');
    });

    it('a write over the limit is refused with 413 and the old content stays', async () => {
      const doc = await write(await create(root, 'limited.txt', 'document'), 'old');
      await expect(backend.writeContent(doc, Readable.from([Buffer.alloc(100)]), 10)).rejects.toSatisfy((e) => e instanceof AppError && e.status === 413);
      expect(await readAll(await backend.openContent(doc))).toBe('old');
    });

    it('copy, rename and move keep the bytes', async () => {
      const folder = await create(root, 'folder', 'collection');
      const doc = await write(await create(root, 'b.txt', 'document'), 'bytes');
      const copied = await backend.copy(doc, folder, 'b-copy.txt');
      const copy: EntryRow = { ...doc, uuid: randomUUID(), parent: folder.uuid, name: 'b-copy.txt', path: copied.path ?? null };
      expect(await readAll(await backend.openContent(copy))).toBe('bytes');
      const renamed = await backend.rename(doc, 'c.txt');
      const afterRename: EntryRow = { ...doc, name: 'c.txt', path: renamed.path ?? doc.path };
      expect(await readAll(await backend.openContent(afterRename))).toBe('bytes');
      const moved = await backend.move(afterRename, folder);
      const afterMove: EntryRow = { ...afterRename, parent: folder.uuid, path: moved.path ?? afterRename.path };
      expect(await readAll(await backend.openContent(afterMove))).toBe('bytes');
      expect(await readAll(await backend.openContent(copy))).toBe('bytes');
    });

    it('remove of a collection does not touch its siblings', async () => {
      const gone = await create(root, 'gone', 'collection');
      const keep = await write(await create(root, 'keep.txt', 'document'), 'kept');
      await backend.remove(gone);
      expect(await readAll(await backend.openContent(keep))).toBe('kept');
    });
  });
}
