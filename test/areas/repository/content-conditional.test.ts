import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdir } from 'node:fs/promises';
import { eventually, startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';

/** Conditional requests on document content: If-Range, If-Match, If-None-Match, and HEAD. */
let rt: TestRuntime;
let api: TestClient;
beforeAll(async () => {
  rt = await startTestRuntime();
  api = rt.client.withToken(await rt.token('alice', ['admin']));
});
afterAll(() => rt?.close());

const TEXT = 'abcdefghijklmnopqrstuvwxyz';

for (const sid of ['store', 'files']) {
  describe(`content conditionals (${sid})`, () => {
    const base = `/v1/services/${sid}/repo`;
    let n = 0;
    const newDoc = async (content?: string) => {
      const uuid = (await api.post(base, { name: `cond-${++n}.txt`, type: 'document' })).body.uuid as string;
      let etag: string | undefined;
      if (content !== undefined) {
        const put = await api.request('PUT', `${base}/${uuid}/content`, { body: content, headers: { 'content-type': 'text/plain' } });
        expect(put.status).toBe(204);
        etag = put.headers.get('etag')!;
      }
      return { uuid, etag, url: `${base}/${uuid}/content` };
    };

    describe('If-Range', () => {
      it('the current ETag: the range (206)', async () => {
        const d = await newDoc(TEXT);
        const res = await api.get(d.url, { headers: { range: 'bytes=2-4', 'if-range': d.etag! } });
        expect(res.status).toBe(206);
        expect(res.raw.toString()).toBe('cde');
      });

      it('a stale ETag (the content changed): the whole new content (200)', async () => {
        const d = await newDoc(TEXT);
        const put = await api.request('PUT', d.url, { body: TEXT.toUpperCase(), headers: { 'content-type': 'text/plain' } });
        expect(put.headers.get('etag')).not.toBe(d.etag);
        const res = await api.get(d.url, { headers: { range: 'bytes=2-4', 'if-range': d.etag! } });
        expect(res.status).toBe(200);
        expect(res.headers.get('content-range')).toBeNull();
        expect(res.raw.toString()).toBe(TEXT.toUpperCase());
      });

      it('a weak ETag, an unknown one or a date: the whole content (200)', async () => {
        const d = await newDoc(TEXT);
        for (const ifRange of [`W/${d.etag!}`, '"nope"', new Date(Date.now() + 86_400_000).toUTCString()]) {
          const res = await api.get(d.url, { headers: { range: 'bytes=0-0', 'if-range': ifRange } });
          expect(res.status, ifRange).toBe(200);
          expect(res.raw.toString()).toBe(TEXT);
        }
      });

      it('without Range, If-Range changes nothing (200)', async () => {
        const d = await newDoc(TEXT);
        expect((await api.get(d.url, { headers: { 'if-range': '"stale"' } })).status).toBe(200);
      });
    });

    describe('If-Match on PUT content', () => {
      it('the current ETag: written (204)', async () => {
        const d = await newDoc('one');
        const res = await api.request('PUT', d.url, { body: 'two', headers: { 'content-type': 'text/plain', 'if-match': d.etag! } });
        expect(res.status).toBe(204);
        expect((await api.get(d.url)).raw.toString()).toBe('two');
      });

      it('a stale, unknown or weak ETag: 412 with the current ETag, content unchanged', async () => {
        const d = await newDoc('one');
        const second = (await api.request('PUT', d.url, { body: 'two', headers: { 'content-type': 'text/plain' } })).headers.get('etag')!;
        for (const ifMatch of [d.etag!, '"nope"', `W/${second}`]) {
          const res = await api.request('PUT', d.url, { body: 'three', headers: { 'content-type': 'text/plain', 'if-match': ifMatch } });
          expect(res.status, ifMatch).toBe(412);
          expect(res.body.code).toBe('PRECONDITION_FAILED');
          expect(res.headers.get('etag')).toBe(second);
        }
        expect((await api.get(d.url)).raw.toString()).toBe('two');
      });

      it('on a collection the 406 comes first, If-Match or not', async () => {
        const coll = (await api.post(base, { name: `coll-${++n}`, type: 'collection' })).body.uuid as string;
        const res = await api.request('PUT', `${base}/${coll}/content`, { body: 'x', headers: { 'content-type': 'text/plain', 'if-match': '*' } });
        expect(res.status).toBe(406);
        expect(res.body.code).toBe('COLLECTION_CONTENT_NOT_ACCEPTABLE');
      });

      it('a list that includes the current ETag: written', async () => {
        const d = await newDoc('one');
        const res = await api.request('PUT', d.url, { body: 'two', headers: { 'content-type': 'text/plain', 'if-match': `"other", ${d.etag!}` } });
        expect(res.status).toBe(204);
      });

      it('If-Match: * on a document with content: written; without content: 412, still none', async () => {
        const full = await newDoc('one');
        expect((await api.request('PUT', full.url, { body: 'two', headers: { 'content-type': 'text/plain', 'if-match': '*' } })).status).toBe(204);
        const empty = await newDoc();
        if (sid === 'files') {
          // a new file on disk may already count as (empty) content: '*' holds exactly when GET finds content
          const has = (await api.get(empty.url)).status === 200;
          expect((await api.request('PUT', empty.url, { body: 'x', headers: { 'content-type': 'text/plain', 'if-match': '*' } })).status).toBe(has ? 204 : 412);
          return;
        }
        const res = await api.request('PUT', empty.url, { body: 'first', headers: { 'content-type': 'text/plain', 'if-match': '*' } });
        expect(res.status).toBe(412);
        expect(res.body.code).toBe('PRECONDITION_FAILED');
        const row = (await api.get(`${base}/${empty.uuid}`)).body;
        expect(row.size ?? 0).toBe(0);
        expect(row.sha256 ?? null).toBeNull();
        // and an ETag on a document without content cannot match either
        expect((await api.request('PUT', empty.url, { body: 'first', headers: { 'content-type': 'text/plain', 'if-match': '"x"' } })).status).toBe(412);
      });
    });

    describe('If-None-Match on GET content', () => {
      it('the current ETag, a list with it, its weak form or *: 304; another: 200', async () => {
        const d = await newDoc(TEXT);
        for (const inm of [d.etag!, `"x", ${d.etag!}`, `W/${d.etag!}`, '*']) {
          const res = await api.get(d.url, { headers: { 'if-none-match': inm } });
          expect(res.status, inm).toBe(304);
          expect(res.raw.length).toBe(0);
        }
        expect((await api.get(d.url, { headers: { 'if-none-match': '"x"' } })).status).toBe(200);
      });
    });

    describe('HEAD on content', () => {
      it('whole and ranged: the GET status and headers, no body', async () => {
        const d = await newDoc(TEXT);
        const whole = await api.request('HEAD', d.url);
        expect(whole.status).toBe(200);
        expect(whole.raw.length).toBe(0);
        expect(whole.headers.get('content-length')).toBe(String(TEXT.length));
        expect(whole.headers.get('etag')).toBe(d.etag);
        expect(whole.headers.get('accept-ranges')).toBe('bytes');
        expect(whole.headers.get('content-type')).toMatch(/^text\/plain/);
        const part = await api.request('HEAD', d.url, { headers: { range: 'bytes=3-5' } });
        expect(part.status).toBe(206);
        expect(part.raw.length).toBe(0);
        expect(part.headers.get('content-range')).toBe(`bytes 3-5/${TEXT.length}`);
        expect(part.headers.get('content-length')).toBe('3');
        const outside = await api.request('HEAD', d.url, { headers: { range: 'bytes=100-' } });
        expect(outside.status).toBe(416);
        expect(outside.headers.get('content-range')).toBe(`bytes */${TEXT.length}`);
        expect((await api.request('HEAD', d.url, { headers: { 'if-none-match': d.etag! } })).status).toBe(304);
        // HEAD does not leak open files: the unread stream is closed when the response ends
        // (the runtime runs in this process, so its descriptors are ours to count)
        const fds = async () => (await readdir('/proc/self/fd')).length;
        const before = await fds();
        for (let i = 0; i < 50; i++) expect((await api.request('HEAD', d.url)).status).toBe(200);
        await eventually(async () => ((await fds()) < before + 10 ? true : undefined), 10_000);
        expect((await api.get(d.url)).raw.toString()).toBe(TEXT);
      });
    });
  });
}

describe('HEAD on a preview', () => {
  it('answers the GET status without a body', async () => {
    const uuid = (await api.post('/v1/services/store/repo', { name: 'nopreview.txt', type: 'document' })).body.uuid as string;
    const get = await api.get(`/v1/services/store/repo/${uuid}/preview`);
    const head = await api.request('HEAD', `/v1/services/store/repo/${uuid}/preview`);
    expect(head.status).toBe(get.status);
    expect(head.raw.length).toBe(0);
  });
});
