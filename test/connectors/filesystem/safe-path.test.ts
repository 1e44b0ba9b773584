import { constants } from 'node:fs';
import { mkdir, mkdtemp, readdir, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CREATE_FLAGS, READ_FLAGS, isInside, openNoFollow, resolveInside, resolveParent, splitRelPath, validateName,
} from '../../../src/connectors/filesystem/safe-path.js';
import { errorCode } from './helpers.js';

let dir: string;
let root: string;
let outside: string;
beforeEach(async () => {
  dir = await realpath(await mkdtemp(join(tmpdir(), 'safe-path-')));
  root = join(dir, 'root');
  outside = join(dir, 'outside');
  await mkdir(join(root, 'sub'), { recursive: true });
  await mkdir(outside);
  await writeFile(join(root, 'sub', 'f.txt'), 'inside');
  await writeFile(join(outside, 'secret.txt'), 'secret');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const code = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    return (err as { code?: string }).code;
  }
  return undefined;
};

describe('validateName', () => {
  it.each(['', '.', '..', 'a/b', 'a\\b', '/etc/passwd', 'a\u0000b', 'a\nb', 'tab\there', 'del\u007f', 'é'.repeat(128)])(
    'refuses %j',
    (name) => expect(code(() => validateName(name))).toBe('INVALID_NAME'),
  );

  it.each(['%2e%2e', '..a', 'a..', '.hidden', 'name with spaces.pdf', 'é'.repeat(127) + 'a', 'x'.repeat(255)])('accepts %j', (name) => {
    expect(code(() => validateName(name))).toBeUndefined();
  });
});

describe('splitRelPath', () => {
  it('splits valid paths and maps the root to no segments', () => {
    expect(splitRelPath('')).toEqual([]);
    expect(splitRelPath('a/b.pdf')).toEqual(['a', 'b.pdf']);
  });

  it.each(['/etc/passwd', '\\x', '../x', 'a/../../x', 'a/..', './a', 'a//b', 'a/'])('refuses %j as an escape', (p) => {
    expect(code(() => splitRelPath(p))).toBe('PATH_ESCAPE');
  });

  it('refuses a segment that is not a valid name', () => {
    expect(code(() => splitRelPath('a\\b'))).toBe('INVALID_NAME');
    expect(code(() => splitRelPath('a/b\u0000'))).toBe('INVALID_NAME');
  });
});

describe('isInside', () => {
  it('compares whole path components', () => {
    expect(isInside('/data/root', '/data/root')).toBe(true);
    expect(isInside('/data/root', '/data/root/a')).toBe(true);
    expect(isInside('/data/root', '/data/rootother/a')).toBe(false);
    expect(isInside('/', '/anything')).toBe(true);
  });
});

describe('resolveInside', () => {
  it('maps relative paths below the real root', async () => {
    expect(await resolveInside(root, '')).toBe(root);
    expect(await resolveInside(root, 'sub/f.txt')).toBe(join(root, 'sub', 'f.txt'));
  });

  it('treats %2e%2e as a literal name that stays inside', async () => {
    await writeFile(join(root, '%2e%2e'), 'x');
    expect(await resolveInside(root, '%2e%2e')).toBe(join(root, '%2e%2e'));
  });

  it.each(['../outside/secret.txt', '/etc/passwd', 'sub/../../outside'])('refuses %j', async (p) => {
    expect(await errorCode(resolveInside(root, p))).toBe('PATH_ESCAPE');
  });

  it('answers 404 for missing entries and missing parents', async () => {
    expect(await errorCode(resolveInside(root, 'nope'))).toBe('ENTRY_NOT_FOUND');
    expect(await errorCode(resolveInside(root, 'nope/deeper'))).toBe('ENTRY_NOT_FOUND');
    expect(await errorCode(resolveInside(root, 'sub/f.txt/below'))).toBe('ENTRY_NOT_FOUND');
  });

  it('refuses a final symlink, wherever it points', async () => {
    await symlink(join(outside, 'secret.txt'), join(root, 'out-link'));
    await symlink(join(root, 'sub', 'f.txt'), join(root, 'in-link'));
    expect(await errorCode(resolveInside(root, 'out-link'))).toBe('PATH_ESCAPE');
    expect(await errorCode(resolveInside(root, 'in-link'))).toBe('PATH_ESCAPE');
  });

  it('refuses directories on the way that are symlinks, outside or inside', async () => {
    await symlink(outside, join(root, 'out-dir'));
    await symlink(join(root, 'sub'), join(root, 'in-dir'));
    expect(await errorCode(resolveInside(root, 'out-dir/secret.txt'))).toBe('PATH_ESCAPE');
    expect(await errorCode(resolveParent(root, 'out-dir/new.txt'))).toBe('PATH_ESCAPE');
    expect(await errorCode(resolveInside(root, 'in-dir/f.txt'))).toBe('PATH_ESCAPE');
  });

  it('resolves a symlinked root once and works below it', async () => {
    const linkRoot = join(dir, 'root-link');
    await symlink(root, linkRoot);
    expect(await resolveInside(linkRoot, 'sub/f.txt')).toBe(join(root, 'sub', 'f.txt'));
  });
});

describe('openNoFollow', () => {
  it('opens regular files', async () => {
    const handle = await openNoFollow(root, join(root, 'sub', 'f.txt'), READ_FLAGS);
    expect((await handle.readFile()).toString()).toBe('inside');
    await handle.close();
  });

  it('refuses a symlink as the final component', async () => {
    await symlink(join(outside, 'secret.txt'), join(root, 'link'));
    expect(await errorCode(openNoFollow(root, join(root, 'link'), READ_FLAGS))).toBe('PATH_ESCAPE');
    expect(await errorCode(openNoFollow(root, join(root, 'link'), constants.O_WRONLY))).toBe('PATH_ESCAPE');
  });

  // Simulates a directory swapped for a symlink after resolveParent checked it: only /proc can tell.
  it.runIf(process.platform === 'linux')('refuses a descriptor that ended up outside and removes a file it created', async () => {
    await symlink(outside, join(root, 'swapped'));
    expect(await errorCode(openNoFollow(root, join(root, 'swapped', 'secret.txt'), READ_FLAGS))).toBe('PATH_ESCAPE');
    expect(await errorCode(openNoFollow(root, join(root, 'swapped', 'planted.txt'), CREATE_FLAGS))).toBe('PATH_ESCAPE');
    expect(await readdir(outside)).toEqual(['secret.txt']);
  });
});
