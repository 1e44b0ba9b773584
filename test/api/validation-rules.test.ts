import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawJson } from '../helpers/client.js';
import { processEnv, startProcess, waitReady, type ProcessEnv, type TestProcess } from '../helpers/process.js';

/**
 * Validation that used to disagree with itself or the docs (issue 20, item 9),
 * against a real server process: every refusal is a 4xx with the error body
 * (DESIGN.md section 6), changes nothing, and the process lives on with no
 * unhandled error and only JSON lines in its log.
 */
let env: ProcessEnv;
let proc: TestProcess;
let token: string;
let printDir: string;

beforeAll(async () => {
  env = await processEnv({ services: { store: { type: 'store' }, work: { type: 'mock', options: { tasks: { itemMs: 10 } } } } });
  printDir = path.join(env.dataDir, 'printed');
  await mkdir(printDir);
  proc = await startProcess('all', env.env);
  await waitReady(proc.url!);
  token = await env.token(proc.url!);
}, 180_000);

afterAll(async () => {
  await env.cleanup();
});

interface Answer {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function send(method: string, p: string, opts: { json?: unknown; body?: string | Buffer; type?: string } = {}): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  let body = opts.body;
  if (opts.json !== undefined) body = JSON.stringify(opts.json);
  if (body !== undefined) headers['content-type'] = opts.type ?? 'application/json';
  const res = await fetch(`${proc.url}${p}`, { method, headers, body, signal: AbortSignal.timeout(60_000) });
  const text = await res.text();
  let parsed: unknown = text;
  try { parsed = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, body: parsed };
}

/** A 4xx with the one error body: status, code, message. */
function refused(res: Answer, status: number, code: string | undefined, label: string): void {
  expect(res.status, `${label}: ${JSON.stringify(res.body).slice(0, 300)}`).toBe(status);
  expect(res.body?.status, label).toBe(status);
  if (code !== undefined) expect(res.body?.code, label).toBe(code);
  expect(typeof res.body?.message, label).toBe('string');
}

/** What a GET answers, to compare before and after refused writes. */
async function snapshot(...paths: string[]): Promise<string> {
  const out: unknown[] = [];
  for (const p of paths) out.push(await send('GET', p));
  return JSON.stringify(out);
}

const TASKS = '/v1/services/work/tasks';

describe('validation: names keep the shared text rule', () => {
  it('validation: a lone surrogate in a task, list or printer name is refused, not stored as U+FFFD', async () => {
    const task = await send('POST', TASKS, { json: { name: 'kept' } });
    expect(task.status).toBe(200);
    const list = await send('POST', '/v1/lists', { json: { name: 'kept', embedded: { listItems: [] } } });
    expect(list.status).toBe(200);
    const before = await snapshot(`${TASKS}?limit=500`, '/v1/lists?limit=500', '/v3/printers/');
    for (const name of ['a\ud800b', 'a\udc00', '\ud83d']) {
      const json = JSON.stringify(name); // escaped: \ud800
      refused(await send('POST', TASKS, rawJson(`{"name":${json}}`)), 400, 'INVALID_NAME', `task ${json}`);
      refused(await send('PATCH', `${TASKS}/${task.body.tid}`, rawJson(`{"name":${json}}`)), 400, 'INVALID_NAME', `task patch ${json}`);
      refused(await send('POST', '/v1/lists', rawJson(`{"name":${json},"embedded":{"listItems":[]}}`)), 400, 'INVALID_NAME', `list ${json}`);
      refused(await send('POST', '/v3/printers/', rawJson(`{"name":${json},"connection":"file://${printDir}"}`)), 400, 'VALIDATION_FAILED', `printer ${json}`);
    }
    expect(await snapshot(`${TASKS}?limit=500`, '/v1/lists?limit=500', '/v3/printers/')).toBe(before);
    // a pair is one character, and fine
    const emoji = await send('POST', TASKS, { json: { name: 'print 🖨 x' } });
    expect(emoji.body.name).toBe('print 🖨 x');
  });

  it('validation: C1 control characters (U+0085) are control characters in printer, task and list names', async () => {
    const before = await snapshot(`${TASKS}?limit=500`, '/v1/lists?limit=500', '/v3/printers/');
    for (const name of ['c1\u0085', '\u0080x', 'x\u009f']) {
      refused(await send('POST', '/v3/printers/', { json: { name, connection: `file://${printDir}` } }), 400, 'VALIDATION_FAILED', `printer ${JSON.stringify(name)}`);
      refused(await send('POST', TASKS, { json: { name } }), 400, 'INVALID_NAME', `task ${JSON.stringify(name)}`);
      refused(await send('POST', '/v1/lists', { body: `list.name,item.href\n${name},https://example.com/a\n`, type: 'text/csv' }), 400, 'INVALID_NAME', `csv list ${JSON.stringify(name)}`);
    }
    expect(await snapshot(`${TASKS}?limit=500`, '/v1/lists?limit=500', '/v3/printers/')).toBe(before);
  });
});

describe('validation: numbers are kept exactly or refused', () => {
  const LOSSY = ['1e400', '-1e400', '1e-400', '123456789012345678901234567890', '-9007199254740993'];

  it('validation: a number JSON would change (1e400, 1e-400, a 30-digit integer) is 400 INVALID_NUMBER, nothing stored', async () => {
    const entry = await send('POST', '/v1/services/store/repo', { json: { name: 'nums', type: 'document', metadata: { n: 1 } } });
    expect(entry.status).toBe(200);
    const task = await send('POST', TASKS, { json: { name: 'nums' } });
    const before = await snapshot(`${TASKS}?limit=500`, '/v1/lists?limit=500', '/v1/services/store/repo?limit=500');
    for (const n of LOSSY) {
      const meta = `{"a":[1,{"b":${n}}],"s":"1e400"}`;
      refused(await send('POST', TASKS, rawJson(`{"name":"n","metadata":${meta}}`)), 400, 'INVALID_NUMBER', `task ${n}`);
      refused(await send('PATCH', `${TASKS}/${task.body.tid}`, rawJson(`{"metadata":${meta}}`)), 400, 'INVALID_NUMBER', `task patch ${n}`);
      refused(await send('PATCH', `/v1/services/store/repo/${entry.body.uuid}`, rawJson(`{"metadata":${meta}}`)), 400, 'INVALID_NUMBER', `entry ${n}`);
      refused(await send('POST', '/v1/lists', rawJson(`{"name":"l","metadata":${meta},"embedded":{"listItems":[]}}`)), 400, 'INVALID_NUMBER', `list import ${n}`);
      refused(await send('POST', '/v1/lists', rawJson(`{"embedded":{"listItems":[{"href":"https://example.com/a","metadata":${meta}}]}}`)), 400, 'INVALID_NUMBER', `item ${n}`);
    }
    expect(await snapshot(`${TASKS}?limit=500`, '/v1/lists?limit=500', '/v1/services/store/repo?limit=500')).toBe(before);
  });

  it('validation: numbers a double holds are kept as sent (fractions, exponents, the largest safe integer, strings that look like numbers)', async () => {
    const meta = '{"a":0.1,"b":1e20,"c":-9007199254740991,"d":2.5e-300,"e":-0,"f":"123456789012345678901234567890","g":1E+2}';
    const task = await send('POST', TASKS, rawJson(`{"name":"exact","metadata":${meta}}`));
    expect(task.status).toBe(200);
    expect(task.body.metadata).toEqual({ a: 0.1, b: 1e20, c: -9007199254740991, d: 2.5e-300, e: 0, f: '123456789012345678901234567890', g: 100 });
  });
});

describe('validation: JSON list imports follow the JSON body rules', () => {
  it('validation: a __proto__ key in a JSON list import is 400 INVALID_KEY, as in every other JSON body', async () => {
    const before = await snapshot('/v1/lists?limit=500', `${TASKS}?limit=500`);
    const bodies = [
      '{"name":"p","metadata":{"__proto__":{"x":1}},"embedded":{"listItems":[]}}',
      '{"name":"p","embedded":{"listItems":[{"href":"https://example.com/a","metadata":{"__proto__":{"x":1}}}]}}',
      '{"name":"p","embedded":{"listItems":[{"href":"https://example.com/a","metadata":{"a":{"b":{"__proto__":1}}}}]}}',
      '{"__proto__":{"name":"x"},"embedded":{"listItems":[]}}',
    ];
    for (const b of bodies) {
      refused(await send('POST', '/v1/lists', { body: b }), 400, 'INVALID_KEY', `list ${b}`);
      // the same body as a JSON-typed list elsewhere: the task create body
      refused(await send('POST', TASKS, { body: `{"name":"t","lists":{"input":${b.replace('"name":"p",', '')}}}` }), 400, 'INVALID_KEY', `task ${b}`);
    }
    expect(await snapshot('/v1/lists?limit=500', `${TASKS}?limit=500`)).toBe(before);
  });
});

describe('validation: list item hrefs keep the task items\' rule', () => {
  const BAD = ['javascript:1', 'file:///etc/passwd', '../../etc/passwd', 'gopher://x/1', '/etc/passwd', 'data:text/html,x'];
  const GOOD = ['https://example.com/a.pdf', '/v1/services/store/repo/0b1c2d3e-0000-4000-8000-000000000009'];

  it('validation: an item href that is neither a repository document nor an http(s) URL is 400 INVALID_HREF on every way in (JSON, CSV, RList, ?href=)', async () => {
    const list = await send('POST', '/v1/lists', { json: { name: 'hrefs', embedded: { listItems: GOOD.map((href) => ({ href })) } } });
    expect(list.status).toBe(200);
    const lid = list.body.lid as string;
    const items = await send('GET', `/v1/lists/${lid}/items?limit=500`);
    const id = items.body[0].id as string;
    const before = await snapshot('/v1/lists?limit=500', `/v1/lists/${lid}/items?embed=items&limit=500`);
    for (const href of BAD) {
      const label = JSON.stringify(href);
      refused(await send('POST', '/v1/lists', { json: { name: 'bad', embedded: { listItems: [{ href: GOOD[0] }, { href }] } } }), 400, 'INVALID_HREF', `json ${label}`);
      refused(await send('POST', '/v1/lists', { body: `item.href\n${GOOD[0]}\n"${href}"\n`, type: 'text/csv' }), 400, 'INVALID_HREF', `csv ${label}`);
      refused(await send('POST', '/v1/lists', { body: `[DOCUMENT_1]\nHREF="${GOOD[0]}"\n[DOCUMENT_2]\nHREF="${href}"\n`, type: 'application/rli' }), 400, 'INVALID_HREF', `rlist ${label}`);
      refused(await send('POST', `/v1/lists/${lid}/items?href=${encodeURIComponent(href)}`), 400, 'INVALID_HREF', `append ?href= ${label}`);
      refused(await send('POST', `/v1/lists/${lid}/items`, { json: { href } }), 400, 'INVALID_HREF', `append ${label}`);
      refused(await send('PUT', `/v1/lists/${lid}/items/${id}`, { json: { href } }), 400, 'INVALID_HREF', `put ${label}`);
      refused(await send('PATCH', `/v1/lists/${lid}/items/${id}?href=${encodeURIComponent(href)}`), 400, 'INVALID_HREF', `patch ?href= ${label}`);
      refused(await send('PATCH', `/v1/lists/${lid}/items/${id}`, { json: { href } }), 400, 'INVALID_HREF', `patch ${label}`);
    }
    expect(await snapshot('/v1/lists?limit=500', `/v1/lists/${lid}/items?embed=items&limit=500`)).toBe(before);
  });
});

describe('validation: reserved printer names', () => {
  it('validation: a printer named "metadata" (any case) is refused; GET /v3/printers/metadata stays the field list', async () => {
    const before = await snapshot('/v3/printers/');
    for (const name of ['metadata', 'Metadata', 'METADATA']) {
      refused(await send('POST', '/v3/printers/', { json: { name, connection: `file://${printDir}` } }), 400, 'VALIDATION_FAILED', name);
    }
    expect(await snapshot('/v3/printers/')).toBe(before);
    const meta = await send('GET', '/v3/printers/metadata');
    expect([meta.status, meta.body.resource]).toEqual([200, 'printers']);
    // a name that merely contains it is fine
    const ok = await send('POST', '/v3/printers/', { json: { name: 'metadata printer', connection: `file://${printDir}` } });
    expect(ok.status).toBe(200);
    expect((await send('GET', `/v3/printers/${encodeURIComponent('metadata printer')}`)).body.name).toBe('metadata printer');
  });
});

describe('validation: OData values have the field\'s type, dates are calendar dates', () => {
  it('validation: wrong types in in (…), paths below a documented property and invalid datetime literals are 400', async () => {
    const cases: [string, string, string][] = [
      ['/v3/jobs/', "id in (1,'a')", 'INVALID_FILTER'],
      ['/v3/jobs/', 'copies in (1,true)', 'INVALID_FILTER'],
      ['/v3/jobs/', "created in ('yesterday')", 'INVALID_FILTER'],
      ['/v3/jobs/', 'checkin/type/x eq 1', 'INVALID_PROPERTY'],
      ['/v3/jobs/', "checkin/colour eq 'x'", 'INVALID_PROPERTY'],
      ['/v3/printers/', "message/text/x eq 'x'", 'INVALID_PROPERTY'],
      ['/v3/jobs/', "created gt datetime'2024-02-30T00:00:00'", 'INVALID_FILTER'],
      ['/v3/jobs/', "created gt datetime'2023-02-29'", 'INVALID_FILTER'],
      ['/v3/jobs/', "created lt date'2024-04-31'", 'INVALID_FILTER'],
      ['/v3/jobs/', "name eq 'x' or created gt datetime'2024-02-30T00:00:00Z'", 'INVALID_FILTER'],
    ];
    for (const [listing, filter, code] of cases) {
      refused(await send('GET', `${listing}?$filter=${encodeURIComponent(filter)}`), 400, code, filter);
    }
    // what the same rules accept
    for (const filter of ["id in (1,2)", "checkin/type eq 'api'", "created gt datetime'2024-02-29T00:00:00'", "name eq 'datetime''2024-02-30'''", "created gt date'2024-02-29'"]) {
      expect((await send('GET', `/v3/jobs/?$filter=${encodeURIComponent(filter)}`)).status, filter).toBe(200);
    }
  });
});

describe('validation: paging limits say the real limit', () => {
  it('validation: offset past 1,000,000,000 is 400 naming the range, not "must be a whole number"', async () => {
    for (const p of ['/v1/lists', `${TASKS}`, '/v1/services/store/repo']) {
      for (const offset of ['1000000001', '99999999999999', '123456789012345678901234567890']) {
        const res = await send('GET', `${p}?offset=${offset}`);
        refused(res, 400, 'INVALID_QUERY', `${p} offset=${offset}`);
        expect(res.body.message, `${p} offset=${offset}`).toMatch(/between 0 and 1000000000/);
      }
      // the limit itself is a valid offset (an empty page past the end)
      expect([200, 404], `${p} offset=1000000000`).toContain((await send('GET', `${p}?offset=1000000000`)).status);
      const word = await send('GET', `${p}?offset=ten`);
      refused(word, 400, 'INVALID_QUERY', `${p} offset=ten`);
      expect(word.body.message).toMatch(/whole number/);
    }
  });
});

describe('validation: list names have the task names\' length limit', () => {
  it('validation: a list name over 1,024 characters is 400 INVALID_NAME on every way in (JSON, CSV, RList, PUT, PATCH, a task\'s CSV)', async () => {
    const list = await send('POST', '/v1/lists', { json: { name: 'short', embedded: { listItems: [] } } });
    const lid = list.body.lid as string;
    const before = await snapshot('/v1/lists?limit=500', `${TASKS}?limit=500`);
    const long = 'n'.repeat(1025);
    refused(await send('POST', '/v1/lists', { json: { name: long, embedded: { listItems: [] } } }), 400, 'INVALID_NAME', 'json');
    refused(await send('POST', '/v1/lists', { body: `list.name,item.href\n${long},https://example.com/a\n`, type: 'text/csv' }), 400, 'INVALID_NAME', 'csv');
    refused(await send('POST', '/v1/lists', { body: `[LIST]\nNAME="${long}"\n[DOCUMENT_1]\nHREF="https://example.com/a"\n`, type: 'application/rli' }), 400, 'INVALID_NAME', 'rlist');
    refused(await send('PUT', `/v1/lists/${lid}`, { json: { name: long } }), 400, 'INVALID_NAME', 'put');
    refused(await send('PATCH', `/v1/lists/${lid}`, { json: { name: long } }), 400, 'INVALID_NAME', 'patch');
    refused(await send('POST', TASKS, { body: `list.name,item.href\n${long},https://example.com/a\n`, type: 'text/csv' }), 400, 'INVALID_NAME', 'task csv');
    refused(await send('POST', TASKS, { json: { name: long } }), 400, 'INVALID_NAME', 'task name');
    refused(await send('POST', TASKS, { json: { name: '  ' } }), 400, 'INVALID_NAME', 'blank task name');
    expect(await snapshot('/v1/lists?limit=500', `${TASKS}?limit=500`)).toBe(before);
    // the limit itself is fine
    const max = await send('PATCH', `/v1/lists/${lid}`, { json: { name: 'n'.repeat(1024) } });
    expect([max.status, max.body.name?.length]).toEqual([200, 1024]);
  });
});

/** A PDF whose page tree lists itself as its own kid. */
const RECURSIVE_PDF = '%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [2 0 R] /Count 1 >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n';

async function pausedPrinter(name: string): Promise<void> {
  expect((await send('POST', '/v3/printers/', { json: { name, connection: `file://${printDir}` } })).status).toBe(200);
  expect((await send('PUT', `/v3/printers/${encodeURIComponent(name)}/pause`)).status).toBe(200);
}

describe('validation: print documents', () => {
  it('validation: a PDF with a recursive page tree reports a clear reason in its page info, not "Maximum call stack size exceeded"', async () => {
    await pausedPrinter('pdf-loop');
    const job = await send('POST', '/v3/jobs/?printer=pdf-loop', { body: RECURSIVE_PDF, type: 'application/pdf' });
    expect(job.status, JSON.stringify(job.body)).toBe(201);
    const info = await send('GET', `/v3/jobs/${job.body.id}/pageinfo`);
    expect(info.status).toBeLessThan(500);
    expect(JSON.stringify(info.body)).not.toMatch(/call stack|RangeError/i);
    expect(info.body).toMatchObject({ pages: null, reason: expect.stringMatching(/page tree is circular/) });
    expect(proc.child.exitCode).toBeNull();
  });
});

/** A PDF with a number too large for a double's integers: pdf-lib warns about it on the console. */
const NOISY_PDF = '%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R /Big 99999999999999999999 >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n';

describe('log: only JSON lines', () => {
  it('log: what the PDF library prints goes through the logger as JSON, not as plain lines', async () => {
    await pausedPrinter('pdf-noise');
    const job = await send('POST', '/v3/jobs/?printer=pdf-noise', { body: NOISY_PDF, type: 'application/pdf' });
    expect(job.status, JSON.stringify(job.body)).toBe(201);
    expect((await send('GET', `/v3/jobs/${job.body.id}/pageinfo`)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const plain = proc.logs.filter((l) => { try { JSON.parse(l); return false; } catch { return true; } });
    expect(plain, plain.slice(0, 5).join('\n')).toEqual([]);
    const routed = proc.logs.map((l) => JSON.parse(l) as { source?: string; msg?: string; level?: string }).filter((l) => l.source === 'console');
    expect(routed.some((l) => /too large for some PDF readers/.test(l.msg ?? '') && l.level === 'warn')).toBe(true);
  });

  it('log: the process lived through every request above with no unhandled error', async () => {
    expect(proc.child.exitCode).toBeNull();
    expect((await fetch(`${proc.url}/healthz`)).status).toBe(200);
    const bad = proc.logs.filter((l) => /unhandled|uncaught|"level":"(fatal)"/i.test(l));
    expect(bad, bad.slice(0, 3).join('\n')).toEqual([]);
  });
});
