import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRuntime, type TestRuntime } from '../../../helpers/runtime.js';
import { expectError, type TestClient } from '../../../helpers/client.js';
import { makePrinter, submit } from '../helpers.js';

/**
 * OData on /v3/jobs/ and /v3/printers/ against real PostgreSQL: every
 * operator, nested properties, dates, paging, $select, $inlinecount, and
 * refusals that name the problem and change nothing.
 */
let rt: TestRuntime;
let api: TestClient;
const ids: Record<string, number> = {};

const q = (filter: string, extra = '') => `/v3/jobs/?$filter=${encodeURIComponent(filter)}&$orderby=id&$top=1000${extra}`;
/** The seeded job names a filter returns, sorted. */
async function names(filter: string): Promise<string[]> {
  const res = await api.get(q(filter));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.map((j: { name: string }) => j.name).sort();
}

beforeAll(async () => {
  rt = await startTestRuntime({ parts: { api: true, workers: false } });
  api = rt.client.withToken(await rt.token('alice', ['admin']));
  await makePrinter(api, 'p7');
  await makePrinter(api, 'Büro 2');
  const seed: [string, string, Record<string, string>, string, string][] = [
    // name, printer, query, status, created
    ['alpha report', 'p7', { copies: '1', priority: '10' }, 'processed', '2024-01-01T10:00:00Z'],
    ['beta Report', 'p7', { copies: '2', priority: '50' }, 'processed', '2024-02-01T10:00:00Z'],
    ['gamma', 'Büro 2', { copies: '3', priority: '90' }, 'error', '2024-03-01T10:00:00Z'],
    ["o'neil 100%", 'Büro 2', { copies: '4', priority: '50' }, 'waitprocessing', '2024-04-01T10:00:00Z'],
  ];
  for (const [name, printer, query, status, created] of seed) {
    const res = await submit(api, printer, 'doc', { name, ...query });
    ids[name] = res.body.id;
    await rt.services.db.query(`UPDATE print_jobs SET status = $2, created = $3 WHERE id = $1`, [res.body.id, status, created]);
  }
  await rt.services.db.query(`UPDATE print_jobs SET checkin = '{"type":"hotfolder","source":"in/a"}', pages = 12 WHERE id = $1`, [ids.gamma]);
});
afterAll(async () => rt?.close());

describe('$filter operators', () => {
  it('eq, ne, gt, ge, lt, le on text, numbers and dates', async () => {
    expect(await names("status eq 'processed'")).toEqual(['alpha report', 'beta Report']);
    expect(await names("status ne 'processed'")).toEqual(['gamma', "o'neil 100%"]);
    expect(await names('copies gt 2')).toEqual(['gamma', "o'neil 100%"]);
    expect(await names('copies ge 2')).toEqual(['beta Report', 'gamma', "o'neil 100%"]);
    expect(await names('copies lt 2')).toEqual(['alpha report']);
    expect(await names('copies le 2')).toEqual(['alpha report', 'beta Report']);
    expect(await names("created ge datetime'2024-03-01T00:00:00Z'")).toEqual(['gamma', "o'neil 100%"]);
    expect(await names("created lt '2024-02-01T10:00:00Z'")).toEqual(['alpha report']);
    expect(await names("created le date'2024-02-01'")).toEqual(['alpha report']);
    expect(await names("'p7' eq printer")).toEqual(['alpha report', 'beta Report']);
  });

  it('and, or, not and parentheses', async () => {
    expect(await names("status eq 'processed' and printer eq 'p7' and priority gt 20")).toEqual(['beta Report']);
    expect(await names("status eq 'error' or copies eq 1")).toEqual(['alpha report', 'gamma']);
    expect(await names("not (status eq 'processed')")).toEqual(['gamma', "o'neil 100%"]);
    expect(await names("(status eq 'error' or status eq 'waitprocessing') and not(copies eq 4)")).toEqual(['gamma']);
    expect(await names("status in ('error', 'waitprocessing')")).toEqual(['gamma', "o'neil 100%"]);
  });

  it('startswith, endswith, contains, substringof (v2), case-insensitive with tolower', async () => {
    expect(await names("startswith(name, 'alpha')")).toEqual(['alpha report']);
    expect(await names("endswith(name, 'Report')")).toEqual(['beta Report']);
    expect(await names("endswith(tolower(name), 'report')")).toEqual(['alpha report', 'beta Report']);
    expect(await names("contains(name, 'eta')")).toEqual(['beta Report']);
    expect(await names("substringof('amm', name)")).toEqual(['gamma']);
    expect(await names("substringof('amm', name) eq true")).toEqual(['gamma']);
    expect(await names("substringof('amm', name) eq false")).toEqual(['alpha report', 'beta Report', "o'neil 100%"]);
    // LIKE wildcards in the value are literal
    expect(await names("contains(name, '100%')")).toEqual(["o'neil 100%"]);
    expect(await names("contains(name, '_')")).toEqual([]);
    expect(await names("startswith(name, 'o''neil')")).toEqual(["o'neil 100%"]);
  });

  it('nested properties with /, null, Unicode values', async () => {
    expect(await names("checkin/type eq 'hotfolder'")).toEqual(['gamma']);
    expect(await names("checkin/type eq 'api'")).toEqual(['alpha report', 'beta Report', "o'neil 100%"]);
    expect(await names("startswith(checkin/source, 'in/')")).toEqual(['gamma']);
    expect(await names('pages eq null')).toEqual(['alpha report', 'beta Report', "o'neil 100%"]);
    expect(await names('pages ne null')).toEqual(['gamma']);
    expect(await names("printer eq 'Büro 2'")).toEqual(['gamma', "o'neil 100%"]);
  });

  it('SQL-looking values are values: no match, no error, nothing changed', async () => {
    expect(await names("name eq 'x'' or 1=1 --'")).toEqual([]);
    expect(await names("printer eq 'p7''; DROP TABLE print_jobs; --'")).toEqual([]);
    expect((await api.get('/v3/jobs/?$top=1000')).body).toHaveLength(4);
  });
});

describe('$orderby, $top, $skip, $select, $inlinecount', () => {
  it('orders by a comma list, asc when omitted', async () => {
    const res = await api.get('/v3/jobs/?$orderby=priority desc,name');
    expect(res.body.map((j: { name: string }) => j.name)).toEqual(['gamma', 'beta Report', "o'neil 100%", 'alpha report']);
    const asc = await api.get('/v3/jobs/?$orderby=created');
    expect(asc.body[0].name).toBe('alpha report');
    const desc = await api.get('/v3/jobs/?$orderby=created desc');
    expect(desc.body[0].name).toBe("o'neil 100%");
    expect((await api.get('/v3/jobs/?$orderby=checkin/type desc,id')).body[0].name).toBe('gamma');
  });

  it('pages with $top and $skip and counts all pages', async () => {
    const res = await api.get('/v3/jobs/?$orderby=id&$top=2&$skip=1&$inlinecount=allpages');
    expect(res.body.totalCount).toBe(4);
    expect(res.body.results.map((j: { name: string }) => j.name)).toEqual(['beta Report', 'gamma']);
    expect((await api.get('/v3/jobs/?$top=0')).body).toEqual([]);
    expect((await api.get('/v3/jobs/?$inlinecount=none')).body).toHaveLength(4);
    const filtered = await api.get(`/v3/jobs/?$filter=${encodeURIComponent("printer eq 'p7'")}&$inlinecount=allpages&$top=1`);
    expect(filtered.body).toMatchObject({ totalCount: 2 });
    expect(filtered.body.results).toHaveLength(1);
  });

  it('$select answers only the named fields', async () => {
    const res = await api.get('/v3/jobs/?$select=id,name,status&$orderby=id');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(Object.keys(res.body[0]).sort()).toEqual(['id', 'name', 'status']);
    expect((await api.get('/v3/jobs/?$select=*')).body[0].printer).toBeDefined();
  });

  it('works on printers too', async () => {
    const res = await api.get(`/v3/printers/?$filter=${encodeURIComponent("startswith(name, 'B') and enabled eq true")}&$select=name,runtime&$inlinecount=allpages`);
    expect(res.body).toMatchObject({ totalCount: 1, results: [{ name: 'Büro 2', runtime: { queuedJobs: 1 } }] });
    expect((await api.get('/v3/printers/?$orderby=name desc')).body.map((p: { name: string }) => p.name)).toEqual(['p7', 'Büro 2']);
    expectError(await api.get('/v3/printers/?$filter=colour eq 1'), 400, 'INVALID_PROPERTY');
  });
});

describe('refusals: 400 naming the problem, nothing changed', () => {
  const cases: [string, string, string | RegExp][] = [
    ["$filter=status eq 'processed", 'INVALID_FILTER', /unterminated text/],
    ['$filter=status eq', 'INVALID_FILTER', /does not parse/],
    ['$filter=status eq processed', 'INVALID_PROPERTY', /"processed"/],
    ["$filter=colour eq 'red'", 'INVALID_PROPERTY', /"colour"/],
    ["$filter=constructor eq 'x'", 'INVALID_PROPERTY', /"constructor"/],
    ["$filter=__proto__/x eq 'x'", 'INVALID_PROPERTY', /__proto__/],
    ["$filter=checkin eq 'x'", 'INVALID_PROPERTY', /checkin\/…/],
    ["$filter=status/x eq 'x'", 'INVALID_PROPERTY', /no properties/],
    ["$filter=stages/x eq 'x'", 'INVALID_PROPERTY', /"stages\/x"/],
    ["$filter=message/x eq 'x'", 'INVALID_PROPERTY', /no properties/],
    ["$filter=copies eq 'many'", 'INVALID_FILTER', /.+/],
    ["$filter=created gt 'yesterday'", 'INVALID_FILTER', /.+/],
    ["$filter=toupper(name) eq 'A'", 'INVALID_FILTER', /toupper is not supported/],
    ['$filter=length(name) gt 3', 'INVALID_FILTER', /not supported/],
    ["$filter=tags/any(t:t eq 'a')", 'INVALID_FILTER', /lambda|property/],
    ['$filter=copies add 1 eq 2', 'INVALID_FILTER', /add/],
    ['$filter=copies gt null', 'INVALID_FILTER', /null/],
    ['$orderby=colour', 'INVALID_PROPERTY', /"colour"/],
    ['$orderby=message', 'INVALID_PROPERTY', /cannot be sorted/],
    ['$orderby=name sideways', 'INVALID_FILTER', /does not parse/],
    ['$top=abc', 'INVALID_FILTER', /\$top/],
    ['$top=-1', 'INVALID_FILTER', /\$top/],
    ['$top=1001', 'INVALID_QUERY', /at most 1000/],
    ['$skip=x', 'INVALID_FILTER', /\$skip/],
    ['$select=colour', 'INVALID_PROPERTY', /"colour"/],
    ['$select=checkin/type', 'INVALID_PROPERTY', /top-level/],
    ['$inlinecount=some', 'INVALID_QUERY', /inlinecount/],
    ['$expand=printer', 'INVALID_QUERY', /unknown query option \$expand/],
    ['$count=true', 'INVALID_QUERY', /unknown query option \$count/],
    ['$foo=1', 'INVALID_QUERY', /unknown query option \$foo/],
    ["$filter=name eq 'a'&$filter=name eq 'b'", 'INVALID_QUERY', /more than once/],
    ["$filter=name eq 'a%00b'", 'INVALID_CHARACTER', /NUL/],
  ];
  for (const [query, code, message] of cases) {
    it(`${query} -> 400 ${code}`, async () => {
      const raw = query.split('&').map((kv) => { const i = kv.indexOf('='); return `${kv.slice(0, i)}=${encodeURIComponent(decodeURIComponent(kv.slice(i + 1)))}`; }).join('&');
      const res = await api.get(`/v3/jobs/?${raw}`);
      expectError(res, 400, code);
      expect(res.body.message).toMatch(message);
    });
  }

  it('a filter nested too deep is refused', async () => {
    const deep = `${'not ('.repeat(40)}copies eq 1${')'.repeat(40)}`;
    expectError(await api.get(`/v3/jobs/?$filter=${encodeURIComponent(deep)}`), 400, 'INVALID_FILTER');
  });

  it('the same filter written with + for spaces and %27 for quotes reads alike', async () => {
    const res = await api.get("/v3/jobs/?%24filter=printer+eq+%27p7%27&%24orderby=id");
    expect(res.body.map((j: { name: string }) => j.name)).toEqual(['alpha report', 'beta Report']);
  });
});
