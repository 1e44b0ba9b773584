import { execFileSync } from 'node:child_process';
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from '../helpers/env.js';
import { tempDir } from '../helpers/fs.js';
import { eventually, startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * What a client is told when a resource the server depends on fails: the
 * database unreachable is 503 `DATABASE_UNAVAILABLE` with `Retry-After`
 * (not an opaque 500), a full disk is 507 `STORAGE_FULL`; nothing is left
 * half-written either way (issue 20, item 15).
 */
describe('fault: database unreachable during requests', () => {
  let rt: TestRuntime;
  let proxy: TcpProxy;
  beforeAll(async () => {
    proxy = await TcpProxy.start(TEST_DATABASE_URL);
    rt = await startTestRuntime({ parts: { api: true, workers: false }, overrides: { database: { url: proxy.url(TEST_DATABASE_URL) } } });
  });
  afterAll(async () => {
    await proxy?.restore();
    await rt?.close();
    await proxy?.close();
  });

  it('fault: requests during a database outage answer 503 DATABASE_UNAVAILABLE with Retry-After, on both APIs; they work again once it is back', async () => {
    const token = await rt.token('u', ['admin']);
    expect((await rt.client.request('GET', '/v1/services/store/repo', { token })).status).toBe(200);
    await proxy.cut();
    for (const [method, url] of [['GET', '/v1/services/store/repo'], ['GET', '/v1/tasks'], ['GET', '/v3/jobs/'], ['POST', '/v1/services/store/repo']] as const) {
      const res = await rt.client.request(method, url, { token, unchecked: true, ...(method === 'POST' ? { json: { name: 'x.txt', type: 'document' } } : {}) });
      expect(res.status, `${method} ${url}`).toBe(503);
      expect(res.body).toMatchObject({ status: 503, code: 'DATABASE_UNAVAILABLE' });
      expect(res.headers.get('retry-after')).toBe('5');
      expect(JSON.stringify(res.body)).not.toMatch(/127\.0\.0\.1|ECONN|postgres/i);
    }
    await proxy.restore();
    await eventually(async () => ((await rt.client.request('GET', '/v1/services/store/repo', { token, unchecked: true })).status === 200 ? true : undefined), 30_000, 250);
  });
});

describe('fault: the disk is full', () => {
  let rt: TestRuntime;
  let blobs: string;
  beforeAll(async () => {
    const dataDir = await tempDir('wcr-full-');
    blobs = path.join(dataDir, 'blobs');
    await mkdir(blobs, { recursive: true });
    // a real full disk: a 1 MiB tmpfs under the blob store (needs root, as CI runs here)
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', blobs]);
    } catch (err) {
      throw new Error(`this test mounts a 1 MiB tmpfs and needs root: ${(err as Error).message}`);
    }
    rt = await startTestRuntime({ parts: { api: true, workers: false }, overrides: { dataDir } });
  });
  afterAll(async () => {
    await rt?.close();
    try {
      execFileSync('umount', [blobs]);
    } catch {
      // not mounted
    }
  });

  it('fault: an upload that fills the disk answers 507 STORAGE_FULL; the document keeps no content and no part file is left', async () => {
    const token = await rt.token('u', ['admin']);
    const created = await rt.client.request('POST', '/v1/services/store/repo', { token, json: { name: 'big.bin', type: 'document' } });
    expect(created.status).toBe(200);
    const uuid = (created.body as { uuid: string }).uuid;
    const put = await rt.client.request('PUT', `/v1/services/store/repo/${uuid}/content`, {
      token, unchecked: true, body: Buffer.alloc(3 * 1024 * 1024, 7), headers: { 'content-type': 'application/octet-stream' },
    });
    expect(put.status).toBe(507);
    expect(put.body).toMatchObject({ status: 507, code: 'STORAGE_FULL' });
    const entry = await rt.client.request('GET', `/v1/services/store/repo/${uuid}`, { token });
    expect((entry.body as { size?: number | null }).size ?? null).toBeNull();
    const left = (await readdir(blobs, { recursive: true })).filter((n) => String(n).endsWith('.part'));
    expect(left).toEqual([]);
    // a small one still fits
    const small = await rt.client.request('PUT', `/v1/services/store/repo/${uuid}/content`, {
      token, body: Buffer.from('fits'), headers: { 'content-type': 'text/plain' },
    });
    expect(small.status).toBe(204);
  });
});
