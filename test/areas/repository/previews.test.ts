import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PDFDocument } from 'pdf-lib';
import sharp from 'sharp';
import { eventually, startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';
import { runCommand } from '../../helpers/repo.js';

let rt: TestRuntime;
let api: TestClient;

beforeAll(async () => {
  rt = await startTestRuntime();
  api = rt.client.withToken(await rt.token('alice', ['admin']));
});
afterAll(() => rt?.close());

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47]);

for (const sid of ['store', 'files']) {
  describe(`previews made by the worker (${sid})`, () => {
    const base = `/v1/services/${sid}/repo`;

    it('PDF: first page preview, thumbnail embedded as base64 PNG, remade when content changes', async () => {
      const pdf = await PDFDocument.create();
      pdf.addPage([595, 842]);
      pdf.addPage([842, 595]);
      const bytes = Buffer.from(await pdf.save());
      const doc = (await api.post(base, { name: 'letter.pdf', type: 'document' })).body.uuid as string;
      expect((await api.request('PUT', `${base}/${doc}/content`, { body: bytes, headers: { 'content-type': 'application/pdf' } })).status).toBe(204);
      const preview = await eventually(async () => {
        const res = await api.get(`${base}/${doc}/preview`);
        return res.status === 200 ? res : undefined;
      });
      expect(preview.headers.get('content-type')).toBe('image/png');
      expect(preview.raw.subarray(0, 4).equals(PNG)).toBe(true);
      const meta = await sharp(preview.raw).metadata();
      expect(meta.height).toBe(1024);
      expect(Math.abs(meta.width! / meta.height! - 595 / 842)).toBeLessThan(0.01);
      const withThumb = await api.get(`${base}/${doc}?embed=thumb,icon`);
      const thumb = Buffer.from(withThumb.body.embedded['content-type'].thumb, 'base64');
      expect((await sharp(thumb).metadata()).height).toBe(128);
      expect(withThumb.body.embedded['content-type'].icon.value).toBe('picture_as_pdf');
      // new content: the old preview no longer counts until the worker made the new one
      const img = await sharp({ create: { width: 400, height: 200, channels: 3, background: '#3366cc' } }).png().toBuffer();
      await api.request('PUT', `${base}/${doc}/content`, { body: img, headers: { 'content-type': 'image/png' } });
      const second = await eventually(async () => {
        const res = await api.get(`${base}/${doc}/preview`);
        return res.status === 200 ? res : undefined;
      });
      const m2 = await sharp(second.raw).metadata();
      expect([m2.width, m2.height]).toEqual([400, 200]);
    });

    it('a copy takes over the preview of the same content (no second render)', async () => {
      const img = await sharp({ create: { width: 320, height: 160, channels: 3, background: '#00aa00' } }).png().toBuffer();
      const doc = (await api.post(base, { name: 'green.png', type: 'document' })).body.uuid as string;
      await api.request('PUT', `${base}/${doc}/content`, { body: img, headers: { 'content-type': 'image/png' } });
      const original = await eventually(async () => {
        const r = await api.get(`${base}/${doc}/preview`);
        return r.status === 200 ? r : undefined;
      });
      const folder = (await api.post(base, { name: 'green-copies', type: 'collection' })).body.uuid as string;
      const cid = (await api.post(`${base}/command`, { command: 'copy', parameters: { source: doc, target: folder } })).body.cid as string;
      const done = await eventually(async () => {
        const st = await api.get(`${base}/command/${cid}`);
        return st.body.state === 'success' ? st.body : undefined;
      });
      const copy = await api.get(`${base}/${done.result.uuid}/preview`); // at once, no waiting for a worker
      expect(copy.status).toBe(200);
      expect(copy.raw.equals(original.raw)).toBe(true);
    });

    it('a file that cannot be rendered (corrupt PDF) ends as unavailable after its retries, not "not ready" forever', async () => {
      const doc = (await api.post(base, { name: 'broken.pdf', type: 'document' })).body.uuid as string;
      await api.request('PUT', `${base}/${doc}/content`, { body: '%PDF-1.7 this is not really a pdf', headers: { 'content-type': 'application/pdf' } });
      const res = await eventually(async () => {
        const r = await api.get(`${base}/${doc}/preview`);
        return r.body?.code === 'PREVIEW_UNAVAILABLE' ? r : undefined;
      }, 30_000, 250);
      expect(res.status).toBe(404);
      expect(res.body.message).toMatch(/PDF/i);
    }, 40_000);

    it('the preview command re-makes a preview; unsupported content fails the command', async () => {
      const img = await sharp({ create: { width: 300, height: 300, channels: 3, background: '#ff0000' } }).jpeg().toBuffer();
      const doc = (await api.post(base, { name: 'red.jpg', type: 'document' })).body.uuid as string;
      await api.request('PUT', `${base}/${doc}/content`, { body: img, headers: { 'content-type': 'image/jpeg' } });
      const done = await runCommand(api, base, 'preview', { source: doc });
      expect(done).toMatchObject({ state: 'success', result: { uuid: doc, href: `${base}/${doc}/preview` } });
      expect((await api.get(`${base}/${doc}/preview`)).status).toBe(200);
      const txt = (await api.post(base, { name: 'notes.txt', type: 'document' })).body.uuid as string;
      await api.request('PUT', `${base}/${txt}/content`, { body: 'plain text', headers: { 'content-type': 'text/plain' } });
      const failed = await runCommand(api, base, 'preview', { source: txt });
      expect(failed).toMatchObject({ state: 'failure', error: { code: 'PREVIEW_UNSUPPORTED' } });
      const res = await api.get(`${base}/${txt}/preview`);
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('PREVIEW_UNAVAILABLE');
    });
  });
}
