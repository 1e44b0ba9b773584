import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DevIssuer } from '../../src/auth/dev-issuer.js';
import { dropSchema } from '../helpers/databases.js';
import { TEST_DATABASE_URL, TEST_REDIS_URL, uniqueName } from '../helpers/env.js';
import { tempDir } from '../helpers/fs.js';
import { killAll, startProcess, waitReady, type TestProcess } from '../helpers/process.js';
import { dropQueues, eventually } from '../helpers/runtime.js';

/**
 * The hostile battery of `hostile-battery.test.ts`, grown to tasks, lists and
 * every `/v3` route (issue 20), with the classes of defects probing found:
 * rights (another user's task, list, job or printer; a task naming a
 * document its owner cannot read), limits (tasks per user, items per task
 * and list, page sizes, offsets), confinement (printer connections to this
 * service's Redis, PostgreSQL or API, link-local, unspecified, multicast,
 * broadcast, directories outside DATA_DIR), validation (control characters,
 * lone surrogates, numbers a double cannot keep, `__proto__` keys, hrefs,
 * OData types and dates, reserved printer names, long names), states (a
 * transition not allowed now) and malformed bodies. One real server process
 * on its own schema, queue prefix and DATA_DIR. The checks are those of the
 * repository battery: no 5xx, every 4xx with the error body, the rows (a
 * dump of every table these routes write) and the printed files exactly as
 * before, the process alive, no unhandled error in its log.
 */
const schema = uniqueName('hbw');
const prefix = uniqueName('hbw');
const MAX_ITEMS = 20;
const MAX_TASKS = 3;
let dataDir: string;
let proc: TestProcess;
let base: string;
let admin: string;
let bob: string;
let reader: string;

interface Req {
  method?: string;
  path: string;
  token?: string | null;
  json?: unknown;
  body?: string | Buffer;
  type?: string;
  headers?: Record<string, string>;
}
interface Answer {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function send(r: Req): Promise<Answer> {
  const headers: Record<string, string> = { ...r.headers };
  const token = r.token === undefined ? admin : r.token;
  if (token) headers.authorization = `Bearer ${token}`;
  let body: string | Buffer | undefined = r.body;
  if (r.json !== undefined) body = JSON.stringify(r.json);
  if (body !== undefined) headers['content-type'] ??= r.type ?? 'application/json';
  const res = await fetch(`${base}${r.path}`, { method: r.method ?? 'GET', headers, body, signal: AbortSignal.timeout(60_000) });
  const text = await res.text();
  let parsed: unknown = text;
  try { parsed = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, body: parsed };
}

async function ok(r: Req, status = 200): Promise<Answer> {
  const res = await send(r);
  expect(res.status, `${r.method ?? 'GET'} ${r.path}: ${JSON.stringify(res.body).slice(0, 300)}`).toBe(status);
  return res;
}

async function withSql<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await c.connect();
  try {
    await c.query(`SET search_path TO "${schema}"`);
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** Every row of the tables tasks, lists and the print API write, in a stable order. */
const dump = () => withSql(async (c) => {
  const out: Record<string, unknown[]> = {};
  for (const [table, order] of [
    ['tasks', 'tid'], ['task_items', '1, 2'], ['lists', 'lid'], ['list_items', 'id'], ['printers', 'name'],
    ['print_jobs', 'id'], ['print_logs', 'id'], ['print_flows', 'name'], ['print_configs', 'key'], ['connector_state', '1, 2'],
    ['entries', 'uuid'],
  ] as const) {
    // connector_state: the task service's only (the default configuration's intakes note their schedules there)
    out[table] = (await c.query(`SELECT * FROM ${table}${table === 'connector_state' ? " WHERE sid = 'work'" : ''} ORDER BY ${order}`)).rows;
  }
  return JSON.stringify(out);
});

/** A PDF whose page tree lists itself as its own kid. */
const RECURSIVE_PDF = '%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [2 0 R] /Count 1 >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n';
const TASKS = '/v1/services/work/tasks';
const ids: Record<string, string> = {};
const jobs: Record<string, number> = {};

beforeAll(async () => {
  dataDir = await tempDir('wcr-hbw-');
  await mkdir(path.join(dataDir, 'printed'));
  const config = path.join(dataDir, 'config.yaml');
  await writeFile(config, stringify({
    database: { url: TEST_DATABASE_URL, schema },
    redis: { url: TEST_REDIS_URL, prefix },
    server: { jsonLimit: '64kb', maxUploadBytes: 1_048_576 },
    commands: { importAllowPrivate: false, importTimeoutMs: 5000 },
    lists: { maxItems: MAX_ITEMS },
    tasks: { maxPerUser: MAX_TASKS },
    printDispatch: { retryBaseMs: 60_000, retryMaxMs: 60_000 },
    services: { store: { type: 'store' }, work: { type: 'mock', options: { tasks: { itemMs: 5 } } } },
  }));
  proc = await startProcess('all', { DATA_DIR: dataDir, CONFIG: config });
  base = proc.url!;
  await waitReady(base);
  const issuer = await DevIssuer.open(dataDir, `${base}/dev-issuer`);
  admin = await issuer.mint({ user: 'alice', roles: ['admin'] });
  bob = await issuer.mint({ user: 'bob', roles: ['user'] });
  reader = await issuer.mint({ user: 'rita', roles: ['readonly'] });
}, 180_000);

afterAll(async () => {
  killAll();
  await dropSchema(schema);
  await dropQueues(prefix);
});

describe('a battery of hostile requests against tasks, lists and the print API', () => {
  it('setup: documents, tasks (one completed, one full), lists, printers, flows and jobs of two users', async () => {
    const doc = await ok({ method: 'POST', path: '/v1/services/store/repo', json: { name: 'alice.txt', type: 'document' } });
    await ok({ method: 'PUT', path: `/v1/services/store/repo/${doc.body.uuid}/content`, body: 'alice', type: 'text/plain' }, 204);
    ids.doc = doc.body.uuid;
    const docHref = `/v1/services/store/repo/${ids.doc}`;
    const item = (i: number) => ({ href: i % 2 ? docHref : `https://example.com/${i}.pdf`, metadata: { i } });
    const task = (name: string, n: number, token = admin) =>
      ok({ method: 'POST', path: TASKS, token, json: { name, lists: { input: { embedded: { listItems: Array.from({ length: n }, (_, i) => item(i)) } } } } });
    ids.task = (await task('alice-task', 2)).body.tid;
    ids.full = (await task('alice-full', MAX_ITEMS)).body.tid;
    ids.done = (await task('alice-done', 1)).body.tid;
    await ok({ method: 'POST', path: `${TASKS}/${ids.done}/action`, json: { action: 'start' } }, 204);
    await eventually(async () => ((await send({ path: `${TASKS}/${ids.done}` })).body.status === 'completed' ? true : undefined), 30_000);
    for (let i = 0; i < MAX_TASKS; i++) ids[`bob${i}`] = (await task(`bob-${i}`, 1, bob)).body.tid;
    const input = await ok({ path: `${TASKS}/${ids.task}/input?embed=items` });
    ids.taskItem = input.body.embedded.listItems[0].id;
    const list = await ok({ method: 'POST', path: '/v1/lists', json: { name: 'alice-list', embedded: { listItems: [item(0), item(1)] } } });
    ids.list = list.body.lid;
    ids.listItem = (await ok({ path: `/v1/lists/${ids.list}?embed=items` })).body.embedded.listItems[0].id;
    ids.bobList = (await ok({ method: 'POST', path: '/v1/lists', token: bob, json: { name: 'bob-list', embedded: { listItems: [item(0)] } } })).body.lid;
    const printed = path.join(dataDir, 'printed');
    await ok({ method: 'POST', path: '/v3/printers/', json: { name: 'p1', connection: `file://${printed}` } });
    await ok({ method: 'POST', path: '/v3/printers/', json: { name: 'held', connection: `file://${printed}` } });
    await ok({ method: 'PUT', path: '/v3/printers/held/pause' });
    await ok({ method: 'POST', path: '/v3/flows/', json: { name: 'rot', steps: [{ use: 'rotate', with: { degrees: 90 } }] } });
    await ok({ method: 'PUT', path: '/v3/configs/', json: { color: 'blue' } });
    const submit = async (printer: string, name: string, body: string, token = admin) =>
      (await ok({ method: 'POST', path: `/v3/jobs/?printer=${printer}&name=${name}`, token, body, type: 'application/pdf' }, 201)).body.id as number;
    jobs.waiting = await submit('held', 'waiting', '%PDF-1.4 waiting');
    jobs.loop = await submit('held', 'loop', RECURSIVE_PDF);
    jobs.bob = await submit('held', 'bob', '%PDF-1.4 bob', bob);
    jobs.printed = await submit('p1', 'printed', '%PDF-1.4 printed');
    await eventually(async () => ((await send({ path: `/v3/jobs/${jobs.printed}` })).body.status === 'processed' ? true : undefined), 60_000);
  }, 120_000);

  it('hostile requests on every task, list and /v3 route: only 4xx with the error body, nothing changes, the process lives', async () => {
    // the relay and dispatch settle after the setup (outbox rows, the printed job's log) before the dump
    await new Promise((r) => setTimeout(r, 1500));
    const before = await dump();
    const printedBefore = JSON.stringify(await listPrinted());
    const reqs: Req[] = [];
    const push = (...r: Req[]) => reqs.push(...r);
    const hostileJson = ['{', '{"name":', 'null', '[]', '"x"', '1e999', '['.repeat(50_000) + ']'.repeat(50_000), `{${'"k":1,'.repeat(20_000)}"z":1}`];
    const badText = ['', 'x'.repeat(1025), 'a\u0000b', 'tab\tx', 'c1\u0085', 'del\u007f'];
    const loneSurrogates = ['"a\\ud800b"', '"\\udc00"'];
    const badNumbers = ['1e400', '-1e400', '1e-400', '123456789012345678901234567890'];
    const badHrefs = ['javascript:1', 'file:///etc/passwd', '../../etc/passwd', '/etc/passwd', 'gopher://x/', 'data:text/plain,x', '/v1/services/store/repo/not-a-uuid', 'http://', ''];
    const protoKeys = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty'];
    const task = `${TASKS}/${ids.task}`;
    const list = `/v1/lists/${ids.list}`;

    // ---- tasks: creation (bad names, numbers, keys, hrefs, too many items, formats), and bob at his limit
    for (const raw of hostileJson) push({ method: 'POST', path: TASKS, body: raw }, { method: 'PUT', path: task, body: raw }, { method: 'PATCH', path: task, body: raw },
      { method: 'POST', path: `${task}/action`, body: raw }, { method: 'PUT', path: `${task}/input`, body: raw }, { method: 'PATCH', path: `${task}/input`, body: raw },
      { method: 'POST', path: `${task}/input`, body: raw }, { method: 'PUT', path: list, body: raw }, { method: 'PATCH', path: list, body: raw },
      { method: 'POST', path: `${list}/items`, body: raw }, { method: 'PUT', path: `${list}/items/${ids.listItem}`, body: raw });
    // a JSON list import ignores members it does not know (a body of 20,000 of them is a list without name): not here
    for (const raw of hostileJson.filter((r) => !r.startsWith('{"k"'))) push({ method: 'POST', path: '/v1/lists', body: raw });
    for (const name of badText) {
      push({ method: 'POST', path: TASKS, json: { name } }, { method: 'PATCH', path: task, json: { name } }, { method: 'PUT', path: task, json: { name } });
      // a list's name may be empty (docs/api.md, Lists)
      if (name !== '') push({ method: 'POST', path: '/v1/lists', json: { name, embedded: { listItems: [] } } }, { method: 'PATCH', path: list, json: { name } }, { method: 'PUT', path: list, json: { name } });
    }
    for (const s of loneSurrogates) {
      push({ method: 'POST', path: TASKS, body: `{"name":${s}}` }, { method: 'PATCH', path: task, body: `{"name":${s}}` });
      push({ method: 'POST', path: '/v1/lists', body: `{"name":${s},"embedded":{"listItems":[]}}` }, { method: 'PATCH', path: list, body: `{"name":${s}}` });
      push({ method: 'POST', path: '/v3/printers/', body: `{"name":${s},"connection":"file://${path.join(dataDir, 'printed')}"}` });
    }
    for (const n of badNumbers) {
      push({ method: 'POST', path: TASKS, body: `{"name":"num","metadata":{"n":${n}}}` }, { method: 'PATCH', path: task, body: `{"metadata":{"n":${n}}}` });
      push({ method: 'PATCH', path: `${task}/input`, body: `{"metadata":{"n":${n}}}` }, { method: 'POST', path: `${task}/input`, body: `{"href":"https://example.com/x","metadata":{"n":${n}}}` });
      push({ method: 'POST', path: '/v1/lists', body: `{"name":"num","metadata":{"n":${n}},"embedded":{"listItems":[]}}` }, { method: 'PATCH', path: list, body: `{"metadata":{"n":${n}}}` });
      push({ method: 'POST', path: '/v1/lists', body: `{"name":"num","embedded":{"listItems":[{"href":"https://example.com/x","metadata":{"n":${n}}}]}}` });
      push({ method: 'PUT', path: '/v3/configs/', body: `{"n":${n}}` });
    }
    // `__proto__` is the one refused key (INVALID_KEY); `constructor` is plain data
    for (const k of ['__proto__']) {
      const meta = `{"${k}":{"polluted":true}}`;
      push({ method: 'POST', path: TASKS, body: `{"name":"proto","metadata":${meta}}` }, { method: 'PATCH', path: task, body: `{"metadata":${meta}}` });
      push({ method: 'POST', path: '/v1/lists', body: `{"name":"proto","metadata":${meta},"embedded":{"listItems":[]}}` });
      push({ method: 'POST', path: '/v1/lists', body: `{"name":"proto","embedded":{"listItems":[{"href":"https://example.com/x","metadata":${meta}}]}}` });
      push({ method: 'PATCH', path: `${list}/items/${ids.listItem}`, body: `{"metadata":${meta}}` });
    }
    push({ method: 'PUT', path: '/v3/configs/', body: '{"__proto__":{"polluted":true}}' });
    for (const href of badHrefs) {
      const items = { embedded: { listItems: [{ href, metadata: {} }] } };
      push({ method: 'POST', path: TASKS, json: { name: 'href', lists: { input: items } } });
      push({ method: 'POST', path: `${task}/input`, json: { href, metadata: {} } }, { method: 'POST', path: `${task}/input?href=${encodeURIComponent(href)}` });
      push({ method: 'PUT', path: `${task}/input/${ids.taskItem}`, json: { href, metadata: {} } });
      push({ method: 'POST', path: '/v1/lists', json: { name: 'href', ...items } });
      push({ method: 'POST', path: '/v1/lists', body: `item.href,item.metadata.name\n${href},x\n`, type: 'text/csv' });
      push({ method: 'POST', path: '/v1/lists', body: `[DOCUMENT_1]\nHREF="${href}"\nNAME="x"\n`, type: 'application/rli' });
      push({ method: 'POST', path: `${list}/items`, json: { href, metadata: {} } }, { method: 'POST', path: `${list}/items?href=${encodeURIComponent(href)}` });
      push({ method: 'PUT', path: `${list}/items/${ids.listItem}`, json: { href, metadata: {} } }, { method: 'PATCH', path: `${list}/items/${ids.listItem}?href=${encodeURIComponent(href)}` });
    }
    push({ method: 'POST', path: '/v1/lists', body: '[DOCUMENT_1]\nFILE="C:\\Windows\\win.ini"\n', type: 'application/rli' });
    push({ method: 'POST', path: '/v1/lists', body: 'item.href,item.metadata.name\n"unterminated,x\n', type: 'text/csv' });
    push({ method: 'POST', path: '/v1/lists', body: 'no.such.column\nx\n', type: 'text/csv' });
    push({ method: 'POST', path: '/v1/lists', body: '<html></html>', type: 'text/html' });
    push({ method: 'POST', path: '/v1/lists', body: Buffer.from([0xff, 0xfe, 0x00]), type: 'text/csv' });
    for (const href of ['file:///etc/passwd', `http://127.0.0.1:${new URL(base).port}/v1/lists`, 'http://169.254.169.254/latest/meta-data/', 'gopher://x/']) {
      push({ method: 'POST', path: `/v1/lists?href=${encodeURIComponent(href)}` }, { method: 'POST', path: `${TASKS}?href=${encodeURIComponent(href)}` });
    }
    push({ method: 'POST', path: '/v1/lists?href=https%3A%2F%2Fexample.com%2Fl.csv', json: { name: 'both' } });
    // limits: more items than a task or list may hold, a full task's input, bob's task count
    const tooMany = Array.from({ length: MAX_ITEMS + 1 }, (_, i) => ({ href: `https://example.com/${i}`, metadata: {} }));
    push({ method: 'POST', path: TASKS, json: { name: 'big', lists: { input: { embedded: { listItems: tooMany } } } } });
    push({ method: 'POST', path: TASKS, body: `item.href\n${tooMany.map((i) => i.href).join('\n')}\n`, type: 'text/csv' });
    push({ method: 'POST', path: '/v1/lists', json: { name: 'big', embedded: { listItems: tooMany } } });
    push({ method: 'POST', path: `${TASKS}/${ids.full}/input`, json: { href: 'https://example.com/one-more', metadata: {} } });
    push({ method: 'POST', path: `${TASKS}/${ids.full}/input?href=https%3A%2F%2Fexample.com%2Fone-more` });
    push({ method: 'POST', path: TASKS, token: bob, json: { name: 'bob-over-the-limit' } });
    push({ method: 'POST', path: TASKS, token: bob, json: { name: 'bob-as-carol' }, headers: { 'x-owner': 'carol' } });
    // searches and paging
    for (const q of ['limit=501', 'limit=-1', 'limit=1e3', 'offset=1000000001', 'offset=-1', 'embed=__proto__', 'embed=bogus', 'sort=__proto__', 'sort=,,,', 'name=%2F(a%2B)%2B%24%2F', 'name=%2F%5B%2F', 'status=%00', `${'a'.repeat(70)}=x`, 'metadata.=1']) {
      push({ path: `/v1/tasks?${q}` }, { path: `${TASKS}?${q}` }, { path: `/v1/lists?${q}` }, { path: `${list}/items?${q}` });
    }
    for (const k of protoKeys) push({ path: `/v1/tasks?${k}=x` }, { path: `/v1/lists?${k}=x` }, { path: `/v1/services/${k}/tasks` }, { path: `${task}?embed=${k}` });
    // ids: malformed, unknown, another user's (404 as if absent), a service without tasks
    for (const id of ['not-a-uuid', '00000000-0000-0000-0000-000000000000', '%00', 'x'.repeat(3000)]) {
      const t = `${TASKS}/${id}`;
      push({ path: t }, { method: 'DELETE', path: t }, { method: 'PATCH', path: t, json: { name: 'x' } }, { path: `${t}/input` }, { path: `${t}/output` });
      push({ method: 'POST', path: `${t}/action`, json: { action: 'start' } }, { method: 'POST', path: `${t}/input`, json: { href: 'https://example.com/x' } });
      push({ path: `/v1/lists/${id}` }, { method: 'DELETE', path: `/v1/lists/${id}` }, { path: `/v1/lists/${id}/items` }, { method: 'POST', path: `/v1/lists/${id}/items?href=https%3A%2F%2Fexample.com` });
      push({ path: `${task}/input/${id}` }, { method: 'DELETE', path: `${task}/input/${id}` }, { path: `${list}/items/${id}` }, { method: 'DELETE', path: `${list}/items/${id}` });
      push({ path: `/v1/tasks/${ids.task}/input/${id}/content` });
    }
    for (const [t, token] of [[task, bob], [`${TASKS}/${ids.done}`, bob], [task, reader], [`${TASKS}/${ids.bob0}`, reader]] as const) {
      push({ path: t, token }, { method: 'DELETE', path: t, token }, { method: 'PATCH', path: t, token, json: { name: 'mine' } }, { method: 'POST', path: `${t}/action`, token, json: { action: 'start' } });
      push({ method: 'POST', path: `${t}/input`, token, json: { href: 'https://example.com/x' } }, { method: 'DELETE', path: `${t}/input/${ids.taskItem}`, token });
      push({ path: `/v1/tasks/${ids.task}/input/${ids.taskItem}/content`, token });
    }
    for (const [l, token] of [[list, bob], [`/v1/lists/${ids.bobList}`, reader]] as const) {
      push({ path: l, token }, { method: 'DELETE', path: l, token }, { method: 'PATCH', path: l, token, json: { name: 'mine' } }, { method: 'PUT', path: l, token, json: { name: 'mine' } });
      push({ method: 'POST', path: `${l}/items?href=https%3A%2F%2Fexample.com`, token }, { path: `${l}/items`, token });
    }
    push({ path: '/v1/services/store/tasks' }, { method: 'POST', path: '/v1/services/store/tasks', json: { name: 'x' } });
    // actions and states
    for (const action of ['bogus', '__proto__', 'constructor', '', 'START']) push({ method: 'POST', path: `${task}/action`, json: { action } });
    push({ method: 'POST', path: `${task}/action`, json: {} }, { method: 'POST', path: `${task}/action`, json: { action: 'start', extra: 1 } });
    for (const action of ['pause', 'resume', 'abort']) push({ method: 'POST', path: `${task}/action`, json: { action } }, { method: 'POST', path: `${TASKS}/${ids.done}/action`, json: { action } });
    // input and output lists
    push({ method: 'PATCH', path: `${task}/input`, json: { embedded: { listItems: [{ id: ids.taskItem, index: 7 }] } } });
    push({ method: 'PATCH', path: `${task}/input`, json: { embedded: { listItems: [{ id: ids.taskItem, index: 0 }, { id: ids.taskItem, index: 1 }] } } });
    push({ method: 'PATCH', path: `${task}/input`, json: { embedded: { listItems: [{ id: '00000000-0000-0000-0000-000000000000', index: 0 }] } } });
    push({ method: 'POST', path: `${task}/input?href=https%3A%2F%2Fexample.com`, json: { href: 'https://example.com' } }, { method: 'POST', path: `${task}/input` });
    for (const m of ['PUT', 'PATCH', 'POST', 'DELETE']) push({ method: m, path: `${task}/output`, json: { metadata: {} } });
    push({ path: list, headers: { accept: 'image/png' } }, { method: 'PUT', path: list, json: { name: 'x', surprise: 1 } });
    push({ method: 'POST', path: `${list}/items?href=https%3A%2F%2Fexample.com`, json: { href: 'https://example.com' } }, { method: 'POST', path: `${list}/items` });
    push({ method: 'PATCH', path: `${list}/items/${ids.listItem}?href=https%3A%2F%2Fexample.com`, json: { metadata: {} } });

    // ---- /v3 jobs
    const printed = path.join(dataDir, 'printed');
    const badOData = [
      "$filter=id in (1,'a')", '$filter=checkin/type/x eq 1', "$filter=created gt datetime'2024-02-30T00:00:00Z'", "$filter=created gt date'2023-13-01'",
      "$filter=name eq '", '$filter=' + '('.repeat(2000) + 'id eq 1' + ')'.repeat(2000), '$filter=substringof(', '$filter=__proto__ eq 1', '$filter=constructor/prototype eq 1',
      "$filter=name eq 'x' and", '$filter=id eq 99999999999999999999999', '$top=-1', '$top=abc', '$top=100000', '$skip=1e10', '$skip=-1', '$orderby=__proto__', '$orderby=id sideways',
      '$select=__proto__', '$select=id,,', '$inlinecount=maybe', '$foo=1', '$filter=' + encodeURIComponent("name eq '\u0000'"),
    ];
    for (const q of badOData) push({ path: `/v3/jobs/?${q.replaceAll(' ', '%20').replaceAll("'", '%27')}` }, { path: `/v3/printers/?${q.replaceAll(' ', '%20').replaceAll("'", '%27')}` });
    const jobIds = ['abc', '-1', '1e3', '1.5', '0x10', '99999999999999999999', '%00', ' 1', String(jobs.bob! + 1000)];
    for (const id of jobIds) {
      const j = `/v3/jobs/${encodeURIComponent(id)}`;
      push({ path: j }, { method: 'DELETE', path: j }, { path: `${j}/logs` }, { path: `${j}/logfile` }, { path: `${j}/collect` }, { path: `${j}/pageinfo` });
      for (const op of ['cancel', 'pause', 'resume', 'repeat']) push({ method: 'PUT', path: `${j}/${op}` });
      push({ method: 'PUT', path: `${j}/move`, json: { printer: 'p1' } }, { method: 'PUT', path: `${j}/tempfiles`, json: { keep: true } });
    }
    // another user's job is absent to bob; a read-only caller changes nothing
    for (const [id, token] of [[jobs.waiting!, bob], [jobs.printed!, bob], [jobs.bob!, reader]] as const) {
      const j = `/v3/jobs/${id}`;
      push({ path: j, token }, { method: 'DELETE', path: j, token }, { path: `${j}/logs`, token }, { path: `${j}/logfile`, token }, { path: `${j}/collect`, token }, { path: `${j}/pageinfo`, token });
      for (const op of ['cancel', 'pause', 'resume', 'repeat']) push({ method: 'PUT', path: `${j}/${op}`, token });
      push({ method: 'PUT', path: `${j}/move`, token, json: { printer: 'p1' } }, { method: 'PUT', path: `${j}/tempfiles`, token, json: { keep: true } });
    }
    // operations that do not fit the state: 412
    push({ method: 'PUT', path: `/v3/jobs/${jobs.waiting}/resume` }, { method: 'PUT', path: `/v3/jobs/${jobs.waiting}/repeat` });
    push({ method: 'PUT', path: `/v3/jobs/${jobs.printed}/cancel` }, { method: 'PUT', path: `/v3/jobs/${jobs.printed}/pause` }, { method: 'PUT', path: `/v3/jobs/${jobs.printed}/move`, json: { printer: 'held' } });
    for (const body of [{ printer: 'nope' }, { printer: '__proto__' }, { printer: 5 }, {}, { printer: 'p1', x: 1 }]) push({ method: 'PUT', path: `/v3/jobs/${jobs.waiting}/move`, json: body });
    for (const body of [{ keep: 'yes' }, {}, { keep: null }]) push({ method: 'PUT', path: `/v3/jobs/${jobs.waiting}/tempfiles`, json: body });
    for (const raw of hostileJson) push({ method: 'PUT', path: `/v3/jobs/${jobs.waiting}/move`, body: raw }, { method: 'PUT', path: `/v3/jobs/${jobs.waiting}/tempfiles`, body: raw });
    // submissions that must be refused
    for (const q of ['', 'printer=nope', 'printer=__proto__', 'printer=p1&copies=-1', 'printer=p1&copies=1e9', 'printer=p1&copies=abc', 'printer=p1&priority=abc', 'printer=p1&priority=1e9',
      'printer=p1&flow=nope', 'printer=p1&retention=-5', 'printer=p1&name=a%00b', 'printer=p1&printer=held', 'printer=p1&name=' + 'x'.repeat(5000)]) {
      push({ method: 'POST', path: `/v3/jobs/?${q}`, body: '%PDF-1.4 x', type: 'application/pdf' });
    }
    push({ method: 'POST', path: '/v3/jobs/?printer=p1', body: Buffer.alloc(2 * 1024 * 1024), type: 'application/pdf' });
    push({ method: 'POST', path: '/v3/jobs/?printer=p1', body: 'x', type: 'not a type' });
    push({ method: 'POST', path: '/v3/jobs/?printer=p1', body: 'x', type: 'application/pdf', token: reader });

    // ---- /v3 printers: confinement, names, rights, states
    const port = new URL(base).port;
    const forbidden = [
      'file:///etc', 'file:///', `file://${dataDir}/../`, 'file:///proc/self', 'socket://127.0.0.1:6379', 'socket://localhost:6379', 'socket://127.0.0.1:5432', `socket://127.0.0.1:${port}`,
      'socket://169.254.169.254:80', 'socket://[fe80::1]:9100', 'socket://0.0.0.0:9100', 'socket://[::]:9100', 'socket://224.0.0.1:9100', 'socket://255.255.255.255:9100',
      'ipp://169.254.169.254/ipp/print', 'ipps://127.0.0.1:6379/', 'lpr://169.254.169.254/q', 'lpr://127.0.0.1:5432/q', 'gopher://x', 'javascript:1', '', 'socket://', 'file://relative/dir',
    ];
    for (const connection of forbidden) {
      push({ method: 'POST', path: '/v3/printers/', json: { name: `bad-${forbidden.indexOf(connection)}`, connection } });
      push({ method: 'PUT', path: '/v3/printers/p1', json: { name: 'p1', connection } });
    }
    for (const name of ['metadata', 'METADATA', 'a\u0085b', 'a\u0000b', '.', '..', 'x'.repeat(201), '', 'p1', 'tab\tx']) {
      push({ method: 'POST', path: '/v3/printers/', json: { name, connection: `file://${printed}` } });
    }
    for (const b of [{ name: 'q', connection: `file://${printed}`, flow: 'nope' }, { name: 'q' }, { connection: `file://${printed}` }, { name: 'q', connection: `file://${printed}`, enabled: 'yes' },
      { name: 'q', connection: `file://${printed}`, extra: 1 }, JSON.parse(`{"__proto__":{"x":1},"name":"q","connection":"file://${printed}"}`)]) {
      push({ method: 'POST', path: '/v3/printers/', json: b });
    }
    push({ method: 'PUT', path: '/v3/printers/p1', json: { name: 'renamed', connection: `file://${printed}` } });
    for (const raw of hostileJson) {
      push({ method: 'POST', path: '/v3/printers/', body: raw }, { method: 'PUT', path: '/v3/printers/p1', body: raw }, { method: 'PUT', path: '/v3/printers/p1/message', body: raw });
      push({ method: 'PUT', path: '/v3/printers/p1/redirect', body: raw }, { method: 'POST', path: '/v3/flows/', body: raw }, { method: 'PUT', path: '/v3/configs/', body: raw });
    }
    for (const name of ['nope', '%00', 'x'.repeat(3000), '..%2f..%2fetc', '__proto__']) {
      const p = `/v3/printers/${name}`;
      push({ path: p }, { method: 'DELETE', path: p }, { method: 'PUT', path: `${p}/checkPhysical` }, { method: 'PUT', path: `${p}/createTestJob` }, { path: `${p}/logs` });
      push({ method: 'PUT', path: `${p}/message`, json: { text: 'x' } }, { method: 'DELETE', path: `${p}/message` }, { method: 'PUT', path: `${p}/pause` }, { method: 'PUT', path: `${p}/resume` });
      push({ method: 'PUT', path: `${p}/redirect`, json: { target: 'p1' } }, { method: 'PUT', path: `${p}/runtime` });
    }
    for (const token of [bob, reader]) {
      push({ method: 'POST', path: '/v3/printers/', token, json: { name: 'mine', connection: `file://${printed}` } }, { method: 'PUT', path: '/v3/printers/p1', token, json: { name: 'p1', connection: `file://${printed}` } });
      push({ method: 'DELETE', path: '/v3/printers/p1', token }, { method: 'PUT', path: '/v3/printers/p1/pause', token }, { method: 'PUT', path: '/v3/printers/held/resume', token });
      push({ method: 'PUT', path: '/v3/printers/p1/message', token, json: { text: 'mine' } }, { method: 'DELETE', path: '/v3/printers/p1/message', token });
      push({ method: 'PUT', path: '/v3/printers/p1/redirect', token, json: { target: 'held' } }, { method: 'PUT', path: '/v3/printers/p1/checkPhysical', token });
      push({ method: 'POST', path: '/v3/flows/', token, json: { name: 'mine', steps: [] } }, { method: 'DELETE', path: '/v3/flows/rot', token });
      push({ method: 'PUT', path: '/v3/configs/', token, json: { color: 'red' } }, { method: 'DELETE', path: '/v3/configs/?key=color', token });
    }
    push({ method: 'PUT', path: '/v3/printers/held/createTestJob', token: reader });
    push({ method: 'DELETE', path: '/v3/printers/held' }, { method: 'PUT', path: '/v3/printers/held/pause' }, { method: 'PUT', path: '/v3/printers/p1/resume' });
    for (const body of [{ target: 'p1' }, { target: 'nope' }, { target: 5 }, {}]) push({ method: 'PUT', path: '/v3/printers/p1/redirect', json: body });
    push({ method: 'PUT', path: '/v3/printers/held/redirect', json: { target: 'held' } });
    for (const body of [{ text: 5 }, { text: 'x'.repeat(100_000) }, { text: 'a\u0000b' }, {}, { text: 'x', extra: 1 }]) push({ method: 'PUT', path: '/v3/printers/p1/message', json: body });

    // ---- /v3 flows, configs, statistics, user roles
    for (const steps of [[{ use: '__proto__' }], [{ use: 'eval', with: { code: 'process.exit(1)' } }], [{ use: 'rotate', with: { degrees: 45 } }], [{ use: 'pageRange', with: { pages: 'abc' } }],
      'steps', [{}], Array.from({ length: 10_000 }, () => ({ use: 'rotate', with: { degrees: 90 } })), [{ use: 'stampText', with: { text: 'x'.repeat(100_000) } }]]) {
      push({ method: 'POST', path: '/v3/flows/', json: { name: 'hostile', steps } });
    }
    for (const name of ['', 'a\u0000b', 'x'.repeat(300), 'rot']) push({ method: 'POST', path: '/v3/flows/', json: { name, steps: [] } });
    for (const name of ['nope', '%00', '__proto__', 'x'.repeat(3000)]) push({ path: `/v3/flows/${name}` }, { method: 'DELETE', path: `/v3/flows/${name}` });
    push({ method: 'POST', path: '/v3/printers/', json: { name: 'uses-rot', connection: `file://${printed}`, flow: 'rot', enabled: 'no' } });
    for (const body of [[], null, 'x', { '': 1 }, { ['k'.repeat(201)]: 1 }, { 'a\u0000b': 1 }, { 'c1\u0085': 1 }, Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`k${i}`, i]))]) {
      push({ method: 'PUT', path: '/v3/configs/', json: body });
    }
    for (const q of ['from=abc', 'to=abc', 'from=2024-02-30T00:00:00Z', 'from=2025-01-02&to=2025-01-01', 'interval=minute', 'interval=__proto__', 'interval=hour&from=2000-01-01&to=2024-01-01', 'printer=%00', 'from=' + 'x'.repeat(5000)]) {
      push({ path: `/v3/statistics/job-count?${q}` }, { path: `/v3/statistics/job-series?${q}` });
    }
    for (const t of ['x', 'a.b.c', `${'a'.repeat(10_000)}.b.c`, null]) {
      push({ path: '/v3/auth/userroles', token: t }, { path: '/v3/jobs/', token: t }, { path: '/v1/tasks', token: t }, { path: '/v1/lists', token: t }, { method: 'POST', path: '/v3/printers/', token: t, json: { name: 'anon', connection: `file://${printed}` } });
    }
    for (const m of ['PROPFIND', 'PATCH', 'PURGE']) push({ method: m, path: '/v3/jobs/' }, { method: m, path: '/v3/printers/p1' }, { method: m, path: task });

    const failures: string[] = [];
    const unexpectedSuccess: string[] = [];
    for (let i = 0; i < reqs.length; i += 16) {
      const wave = await Promise.all(reqs.slice(i, i + 16).map(async (r) => ({ r, res: await send(r) })));
      for (const { r, res } of wave) {
        const what = `${r.method ?? 'GET'} ${r.path.slice(0, 120)} ${JSON.stringify(r.json ?? r.body ?? '').slice(0, 100)} -> ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`;
        const shape = res.status < 400 || (typeof res.body === 'object' && res.body?.status === res.status && typeof res.body.code === 'string' && typeof res.body.message === 'string');
        if (res.status >= 500 || !shape) failures.push(what);
        // a write the battery expects refused that succeeded is named (the dump below fails on it too)
        if (res.status < 400 && !['GET', 'HEAD', 'OPTIONS'].includes(r.method ?? 'GET') && !r.path.endsWith('/runtime')) unexpectedSuccess.push(what);
      }
    }
    expect(failures, `${failures.length} of ${reqs.length}`).toEqual([]);
    expect(unexpectedSuccess).toEqual([]);
    // rows and printed files exactly as before (outbox and relay activity excluded: the dump holds no outbox)
    await new Promise((r) => setTimeout(r, 1000));
    const after = JSON.parse(await dump()) as Record<string, unknown[]>;
    const was = JSON.parse(before) as Record<string, unknown[]>;
    for (const table of Object.keys(was)) expect(after[table], table).toEqual(was[table]);
    expect(JSON.stringify(await listPrinted())).toBe(printedBefore);
    // alive, and the log holds no unhandled error
    expect(proc.child.exitCode).toBeNull();
    expect((await send({ path: '/healthz', token: null })).status).toBe(200);
    const bad = proc.logs.filter((l) => /unhandled|uncaught|"level":(5|6)0/i.test(l));
    expect(bad, bad.slice(0, 3).join('\n')).toEqual([]);
    expect(reqs.length).toBeGreaterThan(900);
  }, 600_000);
});

async function listPrinted(): Promise<string[]> {
  return (await readdir(path.join(dataDir, 'printed'))).sort();
}
