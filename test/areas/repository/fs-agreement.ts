import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'vitest';
import type { TestRuntime } from '../../helpers/runtime.js';

/** Every file and directory below `root`, as repository-relative paths (temp files included: they must not linger). */
export async function diskPaths(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (rel: string) => {
    for (const d of await readdir(path.join(root, rel), { withFileTypes: true })) {
      const child = rel === '' ? d.name : `${rel}/${d.name}`;
      out.push(child);
      if (d.isDirectory()) await walk(child);
    }
  };
  await walk('');
  return out.sort();
}

/** The rows of the `files` service below its root, read straight from the database (no sync runs). */
export async function rowPaths(rt: TestRuntime): Promise<{ path: string; creator: string | null }[]> {
  const { rows } = await rt.services.db.query<{ path: string; creator: string | null }>(
    `SELECT path, creator FROM entries WHERE sid = 'files' AND parent IS NOT NULL ORDER BY path`,
  );
  return rows;
}

/**
 * Disk and rows agree: every row has its file, every file has its row, and
 * no row lacks a creator (what an orphan file adopted by a sync looks like).
 */
export async function expectAgreement(rt: TestRuntime, root: string, note = ''): Promise<void> {
  const disk = await diskPaths(root);
  const rows = await rowPaths(rt);
  expect(rows.map((r) => r.path).sort(), `rows vs disk ${note}`).toEqual(disk);
  expect(rows.filter((r) => r.creator === null), `rows without creator ${note}`).toEqual([]);
}
