import { expect } from 'vitest';
import { checkContract, type CheckedResponse } from './contract.js';

export interface RequestOptions {
  token?: string;
  json?: unknown;
  body?: RequestInit['body'];
  headers?: Record<string, string>;
  /** Skip the OpenAPI check (only for deliberately raw requests). */
  unchecked?: boolean;
}

export interface ApiResponse extends CheckedResponse {
  /** Parsed JSON body (any), or text. */
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  raw: Buffer;
}

/** A fetch-based client whose every response is checked against the OpenAPI documents. */
export class TestClient {
  constructor(readonly baseUrl: string, public token?: string) {}

  withToken(token: string | undefined): TestClient {
    return new TestClient(this.baseUrl, token);
  }

  async request(method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = { ...opts.headers };
    const token = 'token' in opts ? opts.token : this.token;
    if (token) headers.authorization = `Bearer ${token}`;
    let body = opts.body;
    if (opts.json !== undefined) {
      headers['content-type'] ??= 'application/json';
      body = JSON.stringify(opts.json);
    }
    const res = await fetch(`${this.baseUrl}${path}`, { method, headers, body, duplex: 'half' } as RequestInit);
    const raw = Buffer.from(await res.arrayBuffer());
    const contentType = res.headers.get('content-type') ?? '';
    let parsed: unknown = raw.length === 0 ? undefined : raw;
    if (contentType.includes('json') && raw.length > 0) parsed = JSON.parse(raw.toString('utf8'));
    else if (contentType.startsWith('text/') && raw.length > 0) parsed = raw.toString('utf8');
    const out: ApiResponse = { status: res.status, headers: res.headers, contentType, body: parsed, raw };
    if (!opts.unchecked) checkContract(method, new URL(`${this.baseUrl}${path}`).pathname, out);
    return out;
  }

  get = (path: string, opts?: RequestOptions) => this.request('GET', path, opts);
  post = (path: string, json?: unknown, opts?: RequestOptions) => this.request('POST', path, { ...opts, json });
  put = (path: string, json?: unknown, opts?: RequestOptions) => this.request('PUT', path, { ...opts, json });
  patch = (path: string, json?: unknown, opts?: RequestOptions) => this.request('PATCH', path, { ...opts, json });
  delete = (path: string, opts?: RequestOptions) => this.request('DELETE', path, opts);
}

/**
 * A JSON body sent exactly as written (escapes, duplicate keys, nesting that
 * JSON.stringify would not produce or would overflow on): request options
 * for `TestClient.request`, or to spread into a request of one's own.
 */
export const rawJson = (text: string): { body: string; headers: Record<string, string> } =>
  ({ body: text, headers: { 'content-type': 'application/json' } });

export interface ErrorExpectation {
  /** Names the case in every failure message (the input that was sent, say). */
  label?: string;
  /** Also expect no stack trace (`at file.ts:12`) anywhere in the body. */
  noStackTrace?: boolean;
}

/**
 * Expects the one error body of every route: this HTTP status, the same
 * `status` in the body, a string `message`, and this `code` when one is given.
 */
export function expectError(res: { status: number; body: unknown }, status: number, code?: string, { label, noStackTrace = false }: ErrorExpectation = {}): void {
  const body = res.body as Record<string, unknown>;
  expect(res.status, `${label === undefined ? '' : `${label} `}${JSON.stringify(body)}`).toBe(status);
  expect(body.status, label).toBe(status);
  if (code !== undefined) expect(body.code, label).toBe(code);
  expect(typeof body.message, label).toBe('string');
  if (noStackTrace) expect(JSON.stringify(body), label).not.toMatch(/at .*\.(ts|js):\d+/);
}
