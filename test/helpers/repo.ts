import { expect } from 'vitest';
import type { ApiResponse, TestClient } from './client.js';
import { eventually } from './runtime.js';

/** A repository service's path, `/v1/services/<sid>/repo`. */
export const repoPath = (sid: string) => `/v1/services/${sid}/repo`;

/**
 * Creates an entry under `base` (a repository path such as
 * `/v1/services/store/repo`), in `parent` when given, and expects 200; answers
 * the created entry. `metadata` is sent only when given.
 */
export async function postEntry(api: TestClient, base: string, name: string, type: 'document' | 'collection' = 'document', parent?: string, metadata?: Record<string, unknown>): Promise<{ uuid: string; name: string }> {
  const res = await api.post(parent ? `${base}/${parent}` : base, { name, type, ...(metadata === undefined ? {} : { metadata }) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/**
 * A command as its status route answers it (`state`, `error`, `result`, …),
 * read as loosely as any response body of the test client.
 */
export type CommandStatus = ApiResponse['body'];

/**
 * Runs a command on the repository at `base` and answers its status once it
 * is final (success or failure); checks nothing on the way, so a refused
 * launch shows as a poll that times out.
 */
export async function runCommand(api: TestClient, base: string, command: string, parameters: Record<string, unknown>): Promise<CommandStatus> {
  const cid = (await api.post(`${base}/command`, { command, parameters })).body.cid as string;
  return eventually(async () => {
    const s = await api.get(`${base}/command/${cid}`);
    return ['success', 'failure'].includes(s.body.state) ? s.body : undefined;
  });
}

/** Launches a command on `sid` and expects 200 with a cid. */
export async function launch(api: TestClient, sid: string, command: string, parameters: Record<string, unknown>): Promise<string> {
  const res = await api.post(`${repoPath(sid)}/command`, { command, parameters });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.cid as string;
}

/** Polls a command until it is final, expecting 200 on every read (the final read is its one delivery). */
export async function finish(api: TestClient, sid: string, cid: string, timeoutMs = 60_000): Promise<CommandStatus> {
  return eventually(async () => {
    const res = await api.get(`${repoPath(sid)}/command/${cid}`);
    expect(res.status).toBe(200);
    return ['success', 'failure'].includes(res.body.state) ? res.body : undefined;
  }, timeoutMs);
}

/** Names of the root's entries, sorted. */
export async function rootNames(api: TestClient, sid: string): Promise<string[]> {
  const res = await api.get(`${repoPath(sid)}?scope=all&limit=500`);
  expect(res.status).toBe(200);
  return (res.body.embedded.entries as { name: string }[]).map((e) => e.name).sort();
}
