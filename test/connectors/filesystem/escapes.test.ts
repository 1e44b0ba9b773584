import { readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import type { EntryRow } from '../../../src/connectors/connector.js';
import { allPaths, body, childRows, createEntry, errorCode, fakeRow, insertRow, sync, useFsEnv, type Env } from './helpers.js';

let env: Env;
useFsEnv({ db: () => {}, env: (e) => (env = e) });
beforeEach(async () => {
  await writeFile(join(env.outside, 'secret.txt'), 'secret');
});

const outsideUntouched = async () => {
  expect(await readdir(env.outside)).toEqual(['secret.txt']);
  expect(await readFile(join(env.outside, 'secret.txt'), 'utf8')).toBe('secret');
};

describe('escaping paths in rows', () => {
  it.each(['../outside/secret.txt', '/etc/passwd', 'a/../../outside/secret.txt'])('refuses row path %j', async (p) => {
    const row = fakeRow(env, p);
    expect(await errorCode(env.backend.openContent(row))).toBe('PATH_ESCAPE');
    expect(await errorCode(env.backend.writeContent(row, body('x'), 0))).toBe('PATH_ESCAPE');
    expect(await errorCode(env.backend.contentPath(row))).toBe('PATH_ESCAPE');
    expect(await errorCode(env.backend.remove(row))).toBe('PATH_ESCAPE');
    await outsideUntouched();
  });

  it('refuses names with separators or dot-dot in rename, move and copy', async () => {
    const a = await createEntry(env, env.rootRow, 'a.txt', 'document');
    for (const name of ['..', '../x', 'a/b', '/etc/passwd', 'a\\b']) {
      expect(await errorCode(env.backend.rename(a, name))).toBe('INVALID_NAME');
      expect(await errorCode(env.backend.copy(a, env.rootRow, name))).toBe('INVALID_NAME');
    }
    expect(await errorCode(env.backend.move(a, fakeRow(env, '../outside', 'collection')))).toBe('PATH_ESCAPE');
    expect(await errorCode(env.backend.copy(a, fakeRow(env, '/tmp', 'collection'), 'x'))).toBe('PATH_ESCAPE');
    await outsideUntouched();
  });
});

describe('symlinks inside the root', () => {
  beforeEach(async () => {
    await symlink(join(env.outside, 'secret.txt'), join(env.root, 'file-link'));
    await symlink(env.outside, join(env.root, 'dir-link'));
  });

  it('are never listed, not even recursively', async () => {
    await sync(env, env.rootRow, true);
    expect(await allPaths(env)).toEqual(['']);
  });

  it('cannot be read, written, copied or renamed through a row', async () => {
    const link = await insertRow(env, env.rootRow, 'file-link', 'document', 'file-link');
    const viaDir = fakeRow(env, 'dir-link/secret.txt');
    for (const row of [link, viaDir]) {
      expect(await errorCode(env.backend.openContent(row))).toBe('PATH_ESCAPE');
      expect(await errorCode(env.backend.contentPath(row))).toBe('PATH_ESCAPE');
      expect(await errorCode(env.backend.writeContent(row, body('overwritten'), 0))).toBe('PATH_ESCAPE');
      expect(await errorCode(env.backend.copy(row, env.rootRow, 'stolen.txt'))).toBe('PATH_ESCAPE');
      expect(await errorCode(env.backend.rename(row, 'renamed'))).toBe('PATH_ESCAPE');
    }
    expect(await errorCode(createEntry(env, fakeRow(env, 'dir-link', 'collection'), 'planted.txt', 'document'))).toBe('PATH_ESCAPE');
    await outsideUntouched();
    expect((await readdir(env.root)).sort()).toEqual(['dir-link', 'file-link']);
  });

  it('refresh drops the row; remove unlinks the link, never its target', async () => {
    const link = await insertRow(env, env.rootRow, 'file-link', 'document', 'file-link');
    expect(await env.refresh(link)).toBeUndefined();
    await env.backend.remove(fakeRow(env, 'dir-link', 'collection'));
    await env.backend.remove(link);
    expect(await readdir(env.root)).toEqual([]);
    await outsideUntouched();
  });
});

describe('a directory swapped for a symlink after its rows were made', () => {
  let dir: EntryRow;
  let child: EntryRow;
  beforeEach(async () => {
    dir = await createEntry(env, env.rootRow, 'd', 'collection');
    child = await createEntry(env, dir, 'secret.txt', 'document');
    await rm(join(env.root, 'd'), { recursive: true });
    await symlink(env.outside, join(env.root, 'd'));
  });

  it('refuses reading, writing and creating below it', async () => {
    expect(await errorCode(env.backend.openContent(child))).toBe('PATH_ESCAPE');
    expect(await errorCode(env.backend.contentPath(child))).toBe('PATH_ESCAPE');
    expect(await errorCode(env.backend.writeContent(child, body('overwritten'), 0))).toBe('PATH_ESCAPE');
    expect(await errorCode(createEntry(env, dir, 'planted.txt', 'document'))).toBe('PATH_ESCAPE');
    expect(await errorCode(createEntry(env, dir, 'planted', 'collection'))).toBe('PATH_ESCAPE');
    expect(await errorCode(env.backend.copy(child, env.rootRow, 'stolen.txt'))).toBe('PATH_ESCAPE');
    expect(await errorCode(env.backend.rename(child, 'other.txt'))).toBe('PATH_ESCAPE');
    // deleting the stale entry succeeds (its row can go) without touching what the link points at
    await env.backend.remove(child);
    const a = await createEntry(env, env.rootRow, 'a.txt', 'document');
    expect(await errorCode(env.backend.move(a, dir))).toBe('PATH_ESCAPE');
    expect(await errorCode(env.backend.copy(a, dir, 'a.txt'))).toBe('PATH_ESCAPE');
    await outsideUntouched();
  });

  it('sync lists nothing from outside and drops the rows', async () => {
    await sync(env, dir);
    expect(await childRows(env, dir)).toEqual([]);
    await sync(env, env.rootRow, true);
    expect(await allPaths(env)).toEqual(['']);
    expect(await env.refresh(child)).toBeUndefined();
    await outsideUntouched();
  });
});
