import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorHandler } from '../../src/api/middleware/error-handler.js';
import { createLogger } from '../../src/logging/logger.js';
import { collectList, exportFormat, importFormat, listTypes, parseList, writeList } from '../../src/formats/index.js';
import { parseError, parseText, source } from './helpers.js';

describe('choosing a format', () => {
  it('exportTypes and importTypes list exactly JSON, CSV and RList', () => {
    expect(listTypes().map((t) => t.mimeType)).toEqual(['application/json', 'text/csv', 'application/rli']);
    for (const t of listTypes()) expect(Object.keys(t).sort()).toEqual(['description', 'mimeType', 'name']);
  });

  it('imports by Content-Type: none is JSON, parameters and case are ignored, UTF-8 only', () => {
    expect(importFormat(undefined).name).toBe('json');
    expect(importFormat('').name).toBe('json');
    expect(importFormat('Text/CSV; charset="UTF-8"; header=present').name).toBe('csv');
    expect(importFormat('application/rli').name).toBe('rlist');
    expect(() => importFormat('text/plain')).toThrow(expect.objectContaining({ status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' }));
    expect(() => importFormat('text/csv; charset=latin1')).toThrow(expect.objectContaining({ status: 415 }));
  });
});

describe('JSON lists', () => {
  it('reads the create body, keeping types', async () => {
    const list = await parseText('json', '{"name":"L","metadata":{"n":1,"constructor":{"x":true}},"links":{},"embedded":{"listItems":[{"href":"/a","metadata":{"k":[1,null]}},{"href":"/b"}]}}');
    expect(JSON.stringify(list)).toBe('{"name":"L","metadata":{"n":1,"constructor":{"x":true}},"items":[{"href":"/a","metadata":{"k":[1,null]}},{"href":"/b","metadata":{}}]}');
  });

  it('validation: a "__proto__" key is 400 INVALID_KEY, as in every JSON body', async () => {
    const err = await parseError('json', '{"name":"L","metadata":{"n":1,"__proto__":{"x":true}},"embedded":{"listItems":[]}}');
    expect([err.status, err.code]).toEqual([400, 'INVALID_KEY']);
  });

  it.each([
    ['not JSON', '{"name":', 'INVALID_JSON', undefined],
    ['an item without href', '{"embedded":{"listItems":[{"href":"/a"},{"metadata":{}}]}}', 'VALIDATION_FAILED', 'body.embedded.listItems.1.href'],
    ['metadata that is not an object', '{"metadata":[1]}', 'VALIDATION_FAILED', 'body.metadata'],
    ['too many metadata keys', '{"embedded":{"listItems":[{"href":"/a","metadata":{"a":1,"b":{"c":2,"d":3}}}]}}', 'VALIDATION_FAILED', 'body.embedded.listItems.0.metadata'],
  ])('400 for %s', async (_, text, code, path) => {
    const err = await parseError('json', text, { maxKeys: 2 });
    expect([err.status, err.code]).toEqual([400, code]);
    if (path) expect(err.details).toMatchObject({ issues: [expect.objectContaining({ path })] });
  });

  it('413 past maxItems', async () => {
    const err = await parseError('json', '{"embedded":{"listItems":[{"href":"/a"},{"href":"/b"}]}}', { maxItems: 1 });
    expect([err.status, err.code]).toEqual([413, 'LIST_TOO_LARGE']);
  });
});

/**
 * A real Koa server wired as the lists API will be: the format by
 * Content-Type, the export by Accept (ctx.accepts), errors through the
 * project's error handler.
 */
let server: http.Server;
let base: string;
beforeAll(async () => {
  const app = new Koa();
  app.use(errorHandler(createLogger('silent')));
  app.use(async (ctx) => {
    const out = exportFormat((...types) => ctx.accepts(...types));
    const list = await collectList(parseList(importFormat(ctx.get('content-type')), ctx.req));
    ctx.type = out.mimeType;
    ctx.body = await writeList(out, source(list.name, list.metadata, list.items));
  });
  server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => new Promise((r) => server.close(r)));

const post = (body: string, headers: Record<string, string>) => fetch(base, { method: 'POST', body, headers });

describe('over HTTP: import by Content-Type, export by Accept', () => {
  const CSV = 'list.name,list.metadata.JOBINFO.OWNER,item.href,item.metadata.name,item.metadata.copies\r\nL,ops,/a,"A, a",2\r\n,,/b,B,\r\n';

  it('CSV -> RList -> CSV gives back the same text; no Accept answers JSON', async () => {
    const rli = await post(CSV, { 'content-type': 'text/csv', accept: 'application/rli' });
    expect([rli.status, rli.headers.get('content-type')]).toEqual([200, 'application/rli']);
    const rliText = await rli.text();
    expect(rliText).toContain('[JOBINFO]\r\nOWNER="ops"\r\n');
    const csv = await post(rliText, { 'content-type': 'application/rli', accept: 'text/csv' });
    expect(await csv.text()).toBe(CSV);
    const json = await post(CSV, { 'content-type': 'text/csv' });
    expect(json.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await json.json()).toEqual({
      name: 'L', metadata: { JOBINFO: { OWNER: 'ops' } },
      embedded: { listItems: [{ href: '/a', metadata: { name: 'A, a', copies: '2' } }, { href: '/b', metadata: { name: 'B' } }] },
    });
  });

  it('415 for an unknown body type, 406 for an unknown Accept, 400 naming row and column', async () => {
    expect((await post(CSV, { 'content-type': 'text/plain' })).status).toBe(415);
    const na = await post(CSV, { 'content-type': 'text/csv', accept: 'image/png' });
    expect([na.status, ((await na.json()) as { code: string }).code]).toEqual([406, 'NOT_ACCEPTABLE']);
    const bad = await post('item.href,item.metadata.a\n/x,"open\n', { 'content-type': 'text/csv' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ status: 400, code: 'INVALID_CSV', details: { row: 2, column: 'item.metadata.a' } });
  });

  it('100 MB of garbage uploaded: the 400 comes after a small part of it, server memory flat', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    gc();
    const before = process.memoryUsage();
    const total = 100 * 1024 * 1024;
    let sent = 0;
    const chunk = Buffer.alloc(64 * 1024, 'x",\n;[=]');
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(base, { method: 'POST', headers: { 'content-type': 'text/csv', 'content-length': String(total) } });
      req.on('error', reject);
      req.on('response', (r) => {
        const parts: Buffer[] = [];
        r.on('data', (c: Buffer) => parts.push(c));
        r.on('end', () => {
          resolve({ status: r.statusCode!, body: Buffer.concat(parts).toString() });
          req.destroy();
        });
      });
      const pump = () => {
        while (sent < total && !req.destroyed) {
          sent += chunk.length;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
      };
      pump();
    });
    gc();
    const after = process.memoryUsage();
    console.log(`HTTP garbage: sent ${(sent / 1024 / 1024).toFixed(1)} MB before the answer; heap ${((after.heapUsed - before.heapUsed) / 1024 / 1024).toFixed(1)} MB, rss ${((after.rss - before.rss) / 1024 / 1024).toFixed(1)} MB`);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'INVALID_CSV', details: { row: 1 } });
    expect(sent).toBeLessThan(total / 4);
    expect(after.heapUsed - before.heapUsed).toBeLessThan(16 * 1024 * 1024);
  });
});
