import { Readable } from 'node:stream';

/** An answer the API refused (4xx/5xx): its status and the error body's code and message (DESIGN.md section 6). */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string | undefined, message: string) {
    super(message);
  }
}

export interface RequestOptions {
  json?: unknown;
  /** A streamed body (a list import); sent as it is read, never buffered. */
  stream?: Readable;
  contentType?: string;
  accept?: string;
  /** No Authorization header (open routes: /readyz, /, /metrics). */
  open?: boolean;
}

/**
 * The CLI's one way to the HTTP API: the base URL and a bearer token, JSON
 * in and out, streams for list bodies. A refusal becomes an `ApiError`
 * carrying the server's code and message.
 */
export class ApiClient {
  constructor(readonly baseUrl: string, private readonly token: () => Promise<string>) {}

  async request(method: string, path: string, opts: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = {};
    if (!opts.open) headers.authorization = `Bearer ${await this.token()}`;
    if (opts.accept) headers.accept = opts.accept;
    let body: string | ReadableStream | undefined;
    if (opts.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(opts.json);
    } else if (opts.stream) {
      headers['content-type'] = opts.contentType ?? 'application/octet-stream';
      body = Readable.toWeb(opts.stream) as ReadableStream;
    }
    let res: Response;
    try {
      res = await fetch(new URL(path, this.baseUrl), { method, headers, body, ...(opts.stream ? { duplex: 'half' } : {}) } as RequestInit);
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code;
      throw new ApiError(0, cause, `cannot reach ${this.baseUrl}${cause ? ` (${cause})` : ''}: is the server running? Give its address with --url`);
    }
    if (res.status >= 400) {
      const text = await res.text();
      let parsed: { code?: string; message?: string } = {};
      try {
        parsed = JSON.parse(text) as typeof parsed;
      } catch {
        // not the error body: keep the text
      }
      throw new ApiError(res.status, parsed.code, `${method} ${path}: ${res.status}${parsed.code ? ` ${parsed.code}` : ''}: ${parsed.message ?? text.slice(0, 300)}`);
    }
    return res;
  }

  async json<T = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const res = await this.request(method, path, opts);
    if (res.status === 204) return undefined as T;
    return (await res.json()) as T;
  }
}
