import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A document source on loopback for import and `?href=` tests: the handler's paths, 404 for the rest. */
export interface HttpSource {
  url: string;
  close(): Promise<void>;
}

/** Serves fixed bodies by path (`{ '/doc.pdf': { type, body } }`); anything else answers 404. */
export async function serveFiles(files: Record<string, { type: string; body: string | Buffer; length?: boolean }>): Promise<HttpSource> {
  const server = http.createServer((req, res) => {
    const file = Object.hasOwn(files, req.url ?? '') ? files[req.url!] : undefined;
    if (!file) {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': file.type, ...(file.length ? { 'content-length': Buffer.byteLength(file.body) } : {}) });
    res.end(file.body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
