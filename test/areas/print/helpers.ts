import { expect } from 'vitest';
import type { ApiResponse, TestClient } from '../../helpers/client.js';
import { tempDir } from '../../helpers/fs.js';

/** Encodes a printer name for a path (any Unicode, slashes as %2F). */
export const pp = (name: string) => `/v3/printers/${encodeURIComponent(name)}`;

/** A directory printer under a temp dir (removed when the test file is done); answers its name and directory. */
export async function makePrinter(api: TestClient, name: string, extra: Record<string, unknown> = {}) {
  const dir = await tempDir('wcr-printer-');
  const res = await api.post('/v3/printers/', { name, connection: `file://${dir}`, ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { name, dir };
}

/** Submits a document through the extension route. */
export async function submit(api: TestClient, printer: string, body: string | Buffer = '%PDF-1.4 test', query: Record<string, string> = {}): Promise<ApiResponse> {
  const qs = new URLSearchParams({ printer, ...query }).toString();
  return api.request('POST', `/v3/jobs/?${qs}`, { body, headers: { 'content-type': 'application/pdf' } });
}
