import { readdir } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/process.js';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';
import { finish, launch } from '../../helpers/repo.js';

/**
 * Failed commands answer with stable codes and plain messages: a name clash
 * inside copy or import is NAME_EXISTS (not the database's text), a failed
 * fetch says what went wrong in fixed words (no socket or TLS strings, no
 * credentials from the URL). Imported media types are validated.
 */
let rt: TestRuntime;
let api: TestClient;
let source: http.Server;
let src: string;

beforeAll(async () => {
  rt = await startTestRuntime({ overrides: { commands: { importAllowPrivate: true, importTimeoutMs: 5000 } } });
  api = rt.client.withToken(await rt.token('alice', ['admin']));
  source = http.createServer((req, res) => {
    const type = new URL(req.url!, 'http://x').searchParams.get('type');
    if (req.url!.startsWith('/reset/')) {
      res.writeHead(200, { 'content-length': 1_000_000 });
      res.write(Buffer.alloc(200_000));
      setTimeout(() => res.destroy(), 30);
      return;
    }
    if (req.url!.startsWith('/missing/')) {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, type === null ? {} : { 'content-type': type });
    res.end('body');
  });
  await new Promise<void>((r) => source.listen(0, '127.0.0.1', r));
  src = `http://127.0.0.1:${(source.address() as AddressInfo).port}`;
});
afterAll(async () => {
  source?.close();
  await rt?.close();
});

describe.each(['store', 'files'])('stable codes on %s', (sid) => {
  const base = `/v1/services/${sid}/repo`;
  it('a name clash in copy or import is NAME_EXISTS', async () => {
    const doc = (await api.post(base, { name: `taken-${sid}.txt`, type: 'document' })).body.uuid as string;
    const other = (await api.post(base, { name: `other-${sid}.txt`, type: 'document' })).body.uuid as string;
    const root = (await api.get(base)).body.uuid as string;
    for (const [command, parameters] of [
      ['copy', { source: other, target: root, name: `taken-${sid}.txt` }],
      ['copy', { source: doc, target: root }],
      ['import', { url: `${src}/file/x.txt`, name: `taken-${sid}.txt` }],
      ['import', { url: `${src}/file/taken-${sid}.txt` }],
    ] as const) {
      const done = await finish(api, sid, await launch(api, sid, command, parameters));
      expect(done.error, `${command} ${JSON.stringify(parameters)}`).toEqual({ code: 'NAME_EXISTS', message: expect.not.stringMatching(/duplicate|constraint|unique|23505/i) });
    }
    expect(doc).toBeTruthy();
  });

  it('fetch failures say what happened in plain words; no part file is left', async () => {
    const closed = await freePort();
    const cases: [string, RegExp][] = [
      [`http://127.0.0.1:${closed}/x.txt`, /: the connection was refused$/],
      [`https://127.0.0.1:${new URL(src).port}/x.txt`, /: the secure connection \(TLS\) could not be established$/],
      ['http://no-such-host.invalid/x.txt', /: the host name could not be resolved$/],
      [`${src}/reset/x.bin`, /: the connection broke off$/],
      [`${src}/missing/x.txt`, /answered 404$/],
    ];
    for (const [url, message] of cases) {
      const done = await finish(api, sid, await launch(api, sid, 'import', { url }));
      expect(done.error?.code, url).toBe('IMPORT_FETCH_FAILED');
      expect(done.error?.message, url).toMatch(message);
      expect(done.error?.message).not.toMatch(/ECONN|ENOTFOUND|SSL|EPROTO|wrong version|socket|UND_ERR|other side/i);
    }
    expect((await readdir(path.join(rt.dataDir, 'blobs', 'tmp'))).filter((n) => n.endsWith('.part'))).toEqual([]);
    if (sid === 'files') expect((await readdir(path.join(rt.dataDir, 'files'))).filter((n) => n.endsWith('.part'))).toEqual([]);
  });

  it('credentials in the URL appear neither in messages nor in metadata', async () => {
    const failed = await finish(api, sid, await launch(api, sid, 'import', { url: src.replace('//', '//user:s3cret@') + '/missing/c.txt' }));
    expect(failed.error?.message).not.toContain('s3cret');
    const ok = await finish(api, sid, await launch(api, sid, 'import', { url: src.replace('//', '//user:s3cret@') + `/file/cred-${sid}.txt` }));
    const entry = await api.get(`${base}/${ok.result!.uuid}`);
    expect(JSON.stringify(entry.body)).not.toContain('s3cret');
    expect(entry.body.metadata.source).toBe(`${src}/file/cred-${sid}.txt`);
  });

  it('the stored media type is a valid one: from the parameter, else the source, else application/octet-stream', async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['p1', { type: 'Text/Plain; charset=utf-8' }, 'text/plain'],
      ['p2', { type: 'garbage' }, 'application/octet-stream'],
      ['p3', { type: 'a/b/c' }, 'application/octet-stream'],
      ['p4', { type: 'text/<script>' }, 'application/octet-stream'],
      ['p5', {}, 'application/octet-stream'],
      ['p6', { type: 'text/plain', mimeType: 'Application/PDF' }, 'application/pdf'],
      ['p7', { type: 'image/svg+xml' }, 'image/svg+xml'],
    ];
    for (const [name, { type, mimeType }, expected] of cases) {
      const url = `${src}/file/${name}${type === undefined ? '' : `?type=${encodeURIComponent(type as string)}`}`;
      const done = await finish(api, sid, await launch(api, sid, 'import', { url, name: `${name}-${sid}`, ...(mimeType ? { mimeType } : {}) }));
      expect(done.state, name).toBe('success');
      expect((await api.get(`${base}/${done.result!.uuid}`)).body.mimeType, name).toBe(expected);
    }
    for (const mimeType of ['not a type', 'text/plain; charset=x', 'text/', '/plain', 'text/pla in', 'a'.repeat(128) + '/b']) {
      const res = await api.post(`${base}/command`, { command: 'import', parameters: { url: `${src}/file/m.txt`, mimeType } });
      expect(res.status, mimeType).toBe(400);
      expect(res.body.code).toBe('INVALID_PARAMETERS');
    }
  });
});
