import http from 'node:http';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';
import { expectOldContentAndNoParts } from '../../helpers/uploads.js';

/** A client that goes away mid-upload changes nothing: no partial content, no temp files. */
let rt: TestRuntime;
let api: TestClient;
beforeAll(async () => {
  rt = await startTestRuntime();
  api = rt.client.withToken(await rt.token('alice', ['admin']));
});
afterAll(() => rt?.close());

function abortedUpload(urlPath: string, token: string): Promise<void> {
  const url = new URL(rt.url!);
  return new Promise((resolve) => {
    const req = http.request({
      host: url.hostname, port: url.port, method: 'PUT', path: urlPath,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/pdf', 'content-length': String(10 * 1024 * 1024) },
    });
    req.on('error', () => resolve());
    req.write(Buffer.alloc(256 * 1024, 1));
    setTimeout(() => {
      req.destroy();
      resolve();
    }, 200);
  });
}

for (const sid of ['store', 'files']) {
  describe(`aborted upload (${sid})`, () => {
    it('keeps the previous content and leaves no partial file', async () => {
      const base = `/v1/services/${sid}/repo`;
      const doc = (await api.post(base, { name: 'keep.pdf', type: 'document' })).body.uuid as string;
      await api.request('PUT', `${base}/${doc}/content`, { body: 'version 1', headers: { 'content-type': 'text/plain' } });
      const before = (await api.get(`${base}/${doc}`)).body;
      await abortedUpload(`${base}/${doc}/content`, api.token!);
      // the server notices the abort and cleans up
      await expectOldContentAndNoParts(api, rt.dataDir, sid, `${base}/${doc}`, before.sha256);
    });
  });
}
