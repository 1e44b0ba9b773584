import { expect } from 'vitest';
import type { TestClient } from '../../helpers/client.js';
import { eventually } from '../../helpers/runtime.js';

/** Launches a command on `sid` and expects 200 with a cid. */
export async function launch(api: TestClient, sid: string, command: string, parameters: Record<string, unknown>): Promise<string> {
  const res = await api.post(`/v1/services/${sid}/repo/command`, { command, parameters });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.cid as string;
}

/** Polls a command until it is final (that read is its one delivery). */
export async function finish(api: TestClient, sid: string, cid: string, timeoutMs = 60_000): Promise<{ state: string; error: { code: string; message: string } | null; result: Record<string, unknown> | null }> {
  return eventually(async () => {
    const res = await api.get(`/v1/services/${sid}/repo/command/${cid}`);
    expect(res.status).toBe(200);
    return ['success', 'failure'].includes(res.body.state) ? res.body : undefined;
  }, timeoutMs);
}

/** Names of the root's entries. */
export async function rootNames(api: TestClient, sid: string): Promise<string[]> {
  const res = await api.get(`/v1/services/${sid}/repo?scope=all&limit=500`);
  expect(res.status).toBe(200);
  return (res.body.embedded.entries as { name: string }[]).map((e) => e.name).sort();
}
