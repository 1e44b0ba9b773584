import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkContract } from '../../helpers/contract.js';
import { processEnv, startProcess, waitReady, type ProcessEnv, type TestProcess } from '../../helpers/process.js';

/**
 * Issue 20, item 3: what one user may create is bounded by configuration,
 * against a real server process: `tasks.maxPerUser` tasks per user (as
 * creator or owner) and `tasks.maxItems` items per task's input list,
 * however they come (JSON, CSV, RList, appends). Past a limit: a 4xx with a
 * clear body, and nothing changed.
 */
let pe: ProcessEnv;
let proc: TestProcess;
const tokens: Record<string, string> = {};
const base = '/v1/services/demo/tasks';

type Answer = { status: number; body: any }; // eslint-disable-line @typescript-eslint/no-explicit-any

async function call(who: string, method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const raw = typeof body === 'string';
  const res = await fetch(`${proc.url}${url}`, {
    method, headers: { authorization: `Bearer ${tokens[who]}`, 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : raw ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  const answer = { status: res.status, body: text ? JSON.parse(text) : undefined };
  checkContract(method, new URL(url, proc.url).pathname, { ...answer, headers: res.headers, contentType: res.headers.get('content-type') ?? '' });
  return answer;
}

const items = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ href: `https://example.com/${from + i}.pdf`, metadata: { n: from + i } }));
const create = (who: string, name: string, n = 0, headers: Record<string, string> = {}) =>
  call(who, 'POST', base, { name, lists: { input: { embedded: { listItems: items(n) } } } }, headers);
const count = async (who: string) => (await call(who, 'GET', `${base}?inlineCount=true`)).body.count as number;
const allTasks = async () => (await call('admin', 'GET', `${base}?inlineCount=true`)).body.count as number;

beforeAll(async () => {
  pe = await processEnv({ tasks: { maxPerUser: 3, maxItems: 5 } });
  proc = await startProcess('all', pe.env);
  await waitReady(proc.url!);
  tokens.admin = await pe.token(proc.url!, 'root', ['admin']);
  tokens.helper = await pe.token(proc.url!, 'helper', ['admin']);
  for (const u of ['bob', 'dave', 'erin', 'frank']) tokens[u] = await pe.token(proc.url!, u, ['user']);
}, 120_000);
afterAll(() => pe?.cleanup());

describe('limits: tasks per user', () => {
  it('limits: a user\'s fourth task answers 409 TASK_LIMIT_REACHED and creates nothing; a delete frees a place', async () => {
    const tids: string[] = [];
    for (const n of [1, 2, 3]) {
      const res = await create('bob', `bob ${n}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      tids.push(res.body.tid);
    }
    const before = await allTasks();
    const refused = await create('bob', 'bob 4', 2);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'TASK_LIMIT_REACHED', details: { user: 'bob', maxTasks: 3 } });
    // the same as CSV: refused before the body is read
    const csv = await call('bob', 'POST', base, 'item.href\nhttps://example.com/a.pdf\n', { 'content-type': 'text/csv' });
    expect(csv.status).toBe(409);
    expect(csv.body.code).toBe('TASK_LIMIT_REACHED');
    expect(await allTasks()).toBe(before);
    expect(await count('bob')).toBe(3);

    expect((await call('bob', 'DELETE', `${base}/${tids[0]}`)).status).toBe(204);
    expect((await create('bob', 'bob 4')).status).toBe(200);
  });

  it('limits: tasks created for an owner (x-owner) count against the owner as well as the creator', async () => {
    for (const who of ['admin', 'helper', 'admin']) expect((await create(who, 'for dave', 0, { 'x-owner': 'dave' })).status).toBe(200);
    const before = await allTasks();
    const forDave = await create('helper', 'one more for dave', 0, { 'x-owner': 'dave' });
    expect(forDave.status).toBe(409);
    expect(forDave.body).toMatchObject({ code: 'TASK_LIMIT_REACHED', details: { user: 'dave', maxTasks: 3 } });
    const byDave = await create('dave', 'dave himself');
    expect(byDave.status).toBe(409);
    expect(byDave.body.details.user).toBe('dave');
    expect(await allTasks()).toBe(before);
    // the helper has made two, for another user: one more of its own is fine
    expect((await create('helper', 'helper own')).status).toBe(200);
  });
});

describe('limits: tasks per user, at once', () => {
  it('limits: eight creations at once for one user make exactly tasks.maxPerUser tasks, the rest 409', async () => {
    const answers = await Promise.all(Array.from({ length: 8 }, (_, n) => create('frank', `frank ${n}`, 5)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 409, 409, 409, 409, 409]);
    expect(await count('frank')).toBe(3);
  });
});

describe('limits: items per task', () => {
  it('limits: a JSON, CSV or RList create with more than tasks.maxItems items answers 413 LIST_TOO_LARGE and creates nothing', async () => {
    const before = await allTasks();
    const json = await create('erin', 'six', 6);
    expect(json.status).toBe(413);
    expect(json.body).toMatchObject({ code: 'LIST_TOO_LARGE', details: { maxItems: 5 } });
    const csvBody = `item.href\n${items(6).map((i) => i.href).join('\n')}\n`;
    const csv = await call('erin', 'POST', base, csvBody, { 'content-type': 'text/csv' });
    expect(csv.status).toBe(413);
    expect(csv.body).toMatchObject({ code: 'LIST_TOO_LARGE', details: { maxItems: 5 } });
    const rli = items(6).map((i, n) => `[DOCUMENT_${n + 1}]\r\nHREF=${i.href}\r\n`).join('');
    const rlist = await call('erin', 'POST', base, rli, { 'content-type': 'application/rli' });
    expect(rlist.status).toBe(413);
    expect(rlist.body.code).toBe('LIST_TOO_LARGE');
    expect(await allTasks()).toBe(before);
    expect((await create('erin', 'five', 5)).status).toBe(200);
  });

  it('limits: appending to a full input list answers 409 LIST_FULL and adds nothing; a delete frees a place', async () => {
    const task = await create('erin', 'full', 5);
    expect(task.status).toBe(200);
    const input = `${base}/${task.body.tid}/input`;
    const refused = await call('erin', 'POST', input, { href: 'https://example.com/6.pdf', metadata: {} });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'LIST_FULL', details: { tid: task.body.tid, maxItems: 5 } });
    const byHref = await call('erin', 'POST', `${input}?href=${encodeURIComponent('https://example.com/6.pdf')}`);
    expect(byHref.status).toBe(409);
    const list = await call('erin', 'GET', `${input}?embed=items`);
    expect(list.body.count).toBe(5);
    expect(list.body.embedded.listItems.map((i: { href: string }) => i.href)).toEqual(items(5).map((i) => i.href));

    expect((await call('erin', 'DELETE', `${input}/${list.body.embedded.listItems[0].id}`)).status).toBe(204);
    expect((await call('erin', 'POST', input, { href: 'https://example.com/6.pdf', metadata: {} })).status).toBe(200);
  });
});
