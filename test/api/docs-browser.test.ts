import { mkdir } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOpenApi } from '../../src/api/docs/routes.js';
import { QUEUE_NAMES } from '../../src/queue/jobs.js';
import type { TestClient } from '../helpers/client.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * `/docs` in a real browser (issue 24, item 4): headless Chromium (Debian's
 * `chromium`, installed by scripts/lib/common.sh `ensure_chromium`) driven by
 * puppeteer-core. Both documents render without swagger-ui's error box, the
 * intros say what is built, Authorize says how to mint a token, and Try it
 * out on `GET /v1/services` and `GET /v3/jobs/` returns data as the page
 * pre-fills it. The documents still pass an OpenAPI 3.1 validator.
 */
const CHROMIUM = ['chromium', 'chromium-browser', 'google-chrome'].map((name) => {
  try {
    return execFileSync('which', [name], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}).find(Boolean);

let rt: TestRuntime;
let api: TestClient;
let token: string;
let browser: Browser;

beforeAll(async () => {
  // fails (never skips) without a browser: scripts/test installs it
  if (!CHROMIUM) throw new Error('no chromium in PATH: run scripts/test (ensure_chromium) or apt-get install chromium');
  rt = await startTestRuntime();
  token = await rt.token('alice', ['admin']);
  api = rt.client.withToken(token);
  // the demo's print side: a directory printer with a job on it
  const dir = path.join(rt.dataDir, 'printed');
  await mkdir(dir, { recursive: true });
  expect((await api.post('/v3/printers/', { name: 'docs-printer', connection: `file://${dir}` })).status).toBe(200);
  const job = await api.request('POST', '/v3/jobs/?printer=docs-printer', { body: 'hello', headers: { 'content-type': 'text/plain' } });
  expect(job.status).toBe(201);
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await rt?.close();
});

async function openDocs(which: 'workflow' | 'print'): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(`${rt.client.baseUrl}/docs`, { waitUntil: 'networkidle0' });
  if (which === 'print') {
    await page.waitForSelector('.topbar select');
    await page.select('.topbar select', '/openapi/print-api.json');
  }
  const title = which === 'print' ? 'Print Job Management API' : 'Document Workflow API';
  await page.waitForFunction(`document.querySelector('.information-container .title')?.textContent?.includes(${JSON.stringify(title)})`, { timeout: 30_000 });
  await page.waitForSelector('.opblock', { timeout: 30_000 });
  return page;
}

/** Every swagger-ui error or warning box on the page (the red "jsonSchemaDialect" one among them), as text. */
const errorBoxes = (page: Page) => page.$$eval('.errors-wrapper, .errors, .swagger-ui .error-wrapper, .fallback', (els) => els.map((e) => e.textContent ?? ''));

/** Authorize through the dialog, as a person would: its text must say where a token comes from. */
async function authorize(page: Page): Promise<string> {
  await page.click('.auth-wrapper .authorize');
  await page.waitForSelector('.modal-ux .auth-container');
  const text = await page.$eval('.modal-ux', (e) => e.textContent ?? '');
  // the bearer scheme's form (the dialog also lists the OpenID Connect one)
  const forms = await page.$$('.modal-ux .auth-container');
  let bearer;
  for (const f of forms) if ((await f.$eval('h4', (h) => h.textContent ?? '')).trim().startsWith('bearer')) bearer = f;
  if (!bearer) throw new Error('no bearer form in the Authorize dialog');
  const input = await bearer.$('input');
  // persistAuthorization: a token given on the other document's page is kept (same scheme name), the form shows it authorized
  if (input) {
    await input.type(token);
    await (await bearer.$('.btn.modal-btn.auth.authorize'))!.click();
  } else {
    expect(await bearer.evaluate((f) => f.textContent ?? '')).toContain('Authorized');
  }
  await page.click('.modal-ux .btn-done');
  return text;
}

/** Try it out, Execute as pre-filled, and the live answer's status and body. */
async function tryItOut(page: Page, opId: string): Promise<{ status: string; body: string }> {
  const block = `#${opId}`;
  await page.click(`${block} .opblock-summary`);
  await page.waitForSelector(`${block} .try-out__btn`);
  await page.click(`${block} .try-out__btn`);
  await page.click(`${block} .execute`);
  const row = `${block} .live-responses-table tbody tr.response`;
  await page.waitForSelector(row, { timeout: 30_000 });
  const status = await page.$eval(`${row} .response-col_status`, (e) => e.textContent?.trim() ?? '');
  const body = await page.$eval(`${row} .response-col_description`, (e) => e.textContent ?? '');
  return { status, body };
}

describe('/docs in Chromium', () => {
  it('the workflow API: no error box, an intro of what is built, Authorize names the token command, Try it out on GET /v1/services returns the services', async () => {
    const page = await openDocs('workflow');
    expect(await errorBoxes(page)).toEqual([]);
    const intro = await page.$eval('.information-container', (e) => e.textContent ?? '');
    expect(intro).toContain('tasks (their');
    expect(intro).not.toMatch(/not built|DESIGN\.md/);
    expect(await authorize(page)).toContain('npx wcr token --roles admin');
    const res = await tryItOut(page, 'operations-services-listServices');
    expect(res.status).toBe('200');
    expect(res.body).toContain('"sid": "store"');
    await page.close();
  }, 120_000);

  it('the print API: no error box, no stale reference, Try it out on GET /v3/jobs/ returns the job as pre-filled', async () => {
    const page = await openDocs('print');
    expect(await errorBoxes(page)).toEqual([]);
    const intro = await page.$eval('.information-container', (e) => e.textContent ?? '');
    expect(intro).not.toMatch(/DESIGN\.md|not built/);
    expect(intro).toContain('npx wcr token');
    await authorize(page);
    const res = await tryItOut(page, 'operations-jobs-getV3Jobs');
    expect(res.status).toBe('200');
    expect(res.body).toContain('"printer": "docs-printer"');
    await page.close();
  }, 120_000);

  it('the queue dashboard: an admin signs in at /admin/queues/login with a pasted token and sees the queues', async () => {
    const page = await browser.newPage();
    await page.goto(`${rt.client.baseUrl}/admin/queues/login`, { waitUntil: 'networkidle0' });
    expect(await page.$eval('body', (e) => e.textContent ?? '')).toContain('npx wcr token --roles admin');
    await page.type('#t', token);
    await Promise.all([page.waitForNavigation({ waitUntil: 'networkidle0' }), page.click('button[type=submit]')]);
    expect(new URL(page.url()).pathname).toBe('/admin/queues');
    // bull-board's page (rendered by its script) lists every queue of the deployment
    const html = await (await fetch(`${rt.client.baseUrl}/admin/queues`, { headers: { authorization: `Bearer ${token}` } })).text();
    await page.waitForFunction(`${JSON.stringify(QUEUE_NAMES)}.every((q) => document.body.textContent.includes(q))`, { timeout: 30_000 });
    expect(QUEUE_NAMES.filter((q) => html.includes(`>${q}<`))).toEqual([]); // not in the served HTML: the script drew them
    await page.close();
  }, 120_000);

  it('both documents are valid OpenAPI 3.1 (the dialect statement swagger-ui accepts)', async () => {
    for (const name of ['workflow-api', 'print-api'] as const) {
      const doc = loadOpenApi(name);
      expect(doc.jsonSchemaDialect).toBe('https://spec.openapis.org/oas/3.1/dialect/base');
      const res = await new Validator().validate(doc as never);
      expect(res.errors ?? [], name).toEqual([]);
      expect(res.valid, name).toBe(true);
    }
  });
});
