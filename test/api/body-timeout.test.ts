import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows } from '../helpers/databases.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import type { TestClient } from '../helpers/client.js';
import { expectOldContentAndNoParts } from '../helpers/uploads.js';

/*
 * Request bodies and headers that never finish, over real sockets: the server
 * answers 408 (when it still can) and closes the connection, and nothing changes.
 * Short limits here; the defaults are 30 s idle, 1 h total, 60 s for headers.
 */
const IDLE_MS = 1000;
const TOTAL_MS = 5000;
const HEADERS_MS = 1000;

let rt: TestRuntime;
let api: TestClient;
let token: string;
beforeAll(async () => {
  rt = await startTestRuntime({
    overrides: {
      server: { port: 0, host: '127.0.0.1', shutdownTimeoutMs: 5000, bodyIdleTimeoutMs: IDLE_MS, bodyTimeoutMs: TOTAL_MS, headersTimeoutMs: HEADERS_MS },
    },
  });
  token = await rt.token('alice', ['admin']);
  api = rt.client.withToken(token);
});
afterAll(() => rt?.close());

interface RawExchange {
  socket: net.Socket;
  /** Everything the server sent, once it closed the connection (or the test's own bound ran out). */
  closed: Promise<{ text: string; afterMs: number; closedByServer: boolean }>;
}

/** Opens a connection and sends `data` as is; nothing more unless the test writes it. */
function raw(data: string | Buffer, boundMs = 30_000): RawExchange {
  const url = new URL(rt.url!);
  const socket = net.connect(Number(url.port), url.hostname);
  const t0 = Date.now();
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  socket.on('error', () => {});
  socket.write(data);
  const closed = new Promise<{ text: string; afterMs: number; closedByServer: boolean }>((resolve) => {
    const bound = setTimeout(() => {
      socket.destroy();
      resolve({ text: Buffer.concat(chunks).toString('latin1'), afterMs: Date.now() - t0, closedByServer: false });
    }, boundMs);
    socket.on('close', () => {
      clearTimeout(bound);
      resolve({ text: Buffer.concat(chunks).toString('latin1'), afterMs: Date.now() - t0, closedByServer: true });
    });
  });
  return { socket, closed };
}

function head(method: string, urlPath: string, headers: Record<string, string>): string {
  const lines = [`${method} ${urlPath} HTTP/1.1`, 'Host: 127.0.0.1', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** The first response on the connection: status, lower-cased headers, body. */
function parse(text: string): { status: number; headers: Map<string, string>; body: string } {
  const end = text.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers = new Map(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  const length = Number(headers.get('content-length') ?? 0);
  return { status: Number(statusLine!.split(' ')[1]), headers, body: text.slice(end + 4, end + 4 + length) };
}

const entryCount = () => countRows(rt.services.db, 'entries');

describe('JSON bodies', () => {
  it('a body that stops halfway: 408 REQUEST_TIMEOUT, connection closed, nothing created', async () => {
    const before = await entryCount();
    const body = JSON.stringify({ name: 'stalled.txt', type: 'document' });
    const x = raw(head('POST', '/v1/services/store/repo', { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(body.length) }) + body.slice(0, 10));
    const out = await x.closed;
    expect(out.closedByServer).toBe(true);
    const res = parse(out.text);
    expect(res.status).toBe(408);
    expect(res.headers.get('connection')).toBe('close');
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(JSON.parse(res.body)).toMatchObject({ status: 408, code: 'REQUEST_TIMEOUT' });
    expect(out.afterMs).toBeGreaterThanOrEqual(IDLE_MS - 50);
    expect(await entryCount()).toBe(before);
  });

  it('a body that never starts (headers done, no byte after): 408', async () => {
    const x = raw(head('PATCH', '/v1/services/store/repo/00000000-0000-4000-8000-000000000000', { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': '20' }));
    const out = await x.closed;
    expect(out.closedByServer).toBe(true);
    expect(JSON.parse(parse(out.text).body).code).toBe('REQUEST_TIMEOUT');
  });

  it('chunked with no end: the same 408', async () => {
    const x = raw(`${head('POST', '/v1/services/store/repo', { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' })}5\r\n{"nam\r\n`);
    const out = await x.closed;
    expect(out.closedByServer).toBe(true);
    expect(parse(out.text).status).toBe(408);
  });

  it('a slow but steady body (chunks well inside the idle limit) is accepted: each chunk resets the clock', async () => {
    const body = JSON.stringify({ name: 'slow-but-fine.txt', type: 'document' });
    const x = raw(head('POST', '/v1/services/store/repo', { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(body.length), connection: 'close' }));
    // 5 pieces, IDLE_MS/3 apart: longer in all than one idle period, never idle for one
    const pieces = body.match(/.{1,10}/g)!;
    for (const piece of pieces) {
      await new Promise((r) => setTimeout(r, IDLE_MS / 3));
      x.socket.write(piece);
    }
    const res = parse((await x.closed).text);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body).name).toBe('slow-but-fine.txt');
  });

  it('a slowloris (a byte every third of the idle limit) is cut by the total limit', async () => {
    const before = await entryCount();
    const body = `{"name":"${'x'.repeat(200)}","type":"document"}`;
    const x = raw(head('POST', '/v1/services/store/repo', { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(body.length) }));
    let i = 0;
    const drip = setInterval(() => {
      if (!x.socket.destroyed && i < body.length) x.socket.write(body[i++]!);
    }, IDLE_MS / 3);
    try {
      const out = await x.closed;
      expect(out.closedByServer).toBe(true);
      const res = parse(out.text);
      expect(res.status).toBe(408);
      expect(JSON.parse(res.body).message).toMatch(/within/);
      expect(out.afterMs).toBeGreaterThanOrEqual(TOTAL_MS - 50);
      expect(i).toBeLessThan(body.length);
    } finally {
      clearInterval(drip);
    }
    expect(await entryCount()).toBe(before);
  });
});

for (const sid of ['store', 'files']) {
  describe(`content upload that stalls (${sid})`, () => {
    it('408, connection closed, no partial file, the old content stays', async () => {
      const base = `/v1/services/${sid}/repo`;
      const doc = (await api.post(base, { name: `stall-${sid}.bin`, type: 'document' })).body.uuid as string;
      await api.request('PUT', `${base}/${doc}/content`, { body: 'version 1', headers: { 'content-type': 'text/plain' } });
      const before = (await api.get(`${base}/${doc}`)).body;
      const x = raw(Buffer.concat([
        Buffer.from(head('PUT', `${base}/${doc}/content`, { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream', 'content-length': String(10 * 1024 * 1024) })),
        Buffer.alloc(256 * 1024, 7),
      ]));
      const out = await x.closed;
      expect(out.closedByServer).toBe(true);
      const res = parse(out.text);
      expect(res.status).toBe(408);
      expect(JSON.parse(res.body).code).toBe('REQUEST_TIMEOUT');
      await expectOldContentAndNoParts(api, rt.dataDir, sid, `${base}/${doc}`, before.sha256);
    });

    it('a slowloris upload (a small chunk every third of the idle limit) is cut by the total limit, the old content stays', async () => {
      const base = `/v1/services/${sid}/repo`;
      const doc = (await api.post(base, { name: `drip-${sid}.bin`, type: 'document' })).body.uuid as string;
      await api.request('PUT', `${base}/${doc}/content`, { body: 'version 1', headers: { 'content-type': 'text/plain' } });
      const x = raw(head('PUT', `${base}/${doc}/content`, { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream', 'content-length': '1000000' }));
      const drip = setInterval(() => {
        if (!x.socket.destroyed) x.socket.write(Buffer.alloc(16, 1));
      }, IDLE_MS / 3);
      try {
        const out = await x.closed;
        expect(out.closedByServer).toBe(true);
        expect(parse(out.text).status).toBe(408);
        expect(out.afterMs).toBeGreaterThanOrEqual(TOTAL_MS - 50);
      } finally {
        clearInterval(drip);
      }
      expect((await api.get(`${base}/${doc}/content`)).raw.toString()).toBe('version 1');
    });

    it('a large upload whose chunks keep coming is stored (the idle clock is per chunk)', async () => {
      const base = `/v1/services/${sid}/repo`;
      const doc = (await api.post(base, { name: `steady-${sid}.bin`, type: 'document' })).body.uuid as string;
      const piece = Buffer.alloc(64 * 1024, 3);
      const n = 6;
      const x = raw(head('PUT', `${base}/${doc}/content`, { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream', 'content-length': String(n * piece.length), connection: 'close' }));
      for (let i = 0; i < n; i++) {
        await new Promise((r) => setTimeout(r, IDLE_MS / 3));
        x.socket.write(piece);
      }
      expect(parse((await x.closed).text).status).toBe(204);
      expect((await api.get(`${base}/${doc}`)).body.size).toBe(n * piece.length);
    });
  });
}

describe('bodies nobody reads and headers that never end', () => {
  it('a body left unread by an error answer (401) does not hold the connection', async () => {
    const x = raw(`${head('PUT', '/v1/services/store/repo/00000000-0000-4000-8000-000000000000/content', { 'content-type': 'application/octet-stream', 'content-length': '1000000' })}abc`);
    const out = await x.closed;
    expect(out.closedByServer).toBe(true);
    expect(parse(out.text).status).toBe(401);
    // the idle limit closed it, not Node's whole-request backstop (headers + total + 10 s = 16 s here)
    expect(out.afterMs).toBeLessThan(10_000);
  });

  it('headers that stop midway: Node answers 408 and closes', async () => {
    const x = raw('GET /v1/services HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
    const out = await x.closed;
    expect(out.closedByServer).toBe(true);
    expect(out.text).toMatch(/^HTTP\/1\.1 408/);
    // bounded by the limit plus one check interval (a quarter of it), with room for a loaded machine
    expect(out.afterMs).toBeLessThan(HEADERS_MS * 10);
  });

  it('headers trickled one byte at a time are cut the same way', async () => {
    const x = raw('G');
    const rest = 'ET /v1/services HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n';
    let i = 0;
    const drip = setInterval(() => {
      if (!x.socket.destroyed && i < rest.length) x.socket.write(rest[i++]!);
    }, 100);
    try {
      const out = await x.closed;
      expect(out.closedByServer).toBe(true);
      expect(out.text).toMatch(/^HTTP\/1\.1 408/);
      expect(i).toBeLessThan(rest.length);
    } finally {
      clearInterval(drip);
    }
  });

  it('the server still serves normal requests afterwards', async () => {
    expect((await api.get('/v1/services')).status).toBe(200);
  });
});
