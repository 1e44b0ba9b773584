import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'vitest';
import type { TestClient } from './client.js';
import { eventually } from './runtime.js';

/**
 * After an upload that did not complete: no temporary file is left (blob
 * store, or the filesystem repository's root) and the document still has its
 * old content, `version 1` as the suites write it.
 */
export async function expectOldContentAndNoParts(api: TestClient, dataDir: string, sid: string, docPath: string, sha256: string): Promise<void> {
  await eventually(async () => {
    const tmp = await readdir(path.join(dataDir, 'blobs', 'tmp'));
    const parts = sid === 'files' ? (await readdir(path.join(dataDir, 'files'))).filter((n) => n.endsWith('.part')) : [];
    return tmp.length === 0 && parts.length === 0 ? true : undefined;
  }, 10_000);
  const after = (await api.get(docPath)).body;
  expect(after.sha256).toBe(sha256);
  expect(after.size).toBe(9);
  expect((await api.get(`${docPath}/content`)).raw.toString()).toBe('version 1');
}
