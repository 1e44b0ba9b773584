import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { parse as parseYaml } from 'yaml';

/**
 * Validates every HTTP response the tests see against openapi/*.yaml, so the
 * document cannot drift from the code: an undocumented path, method or status,
 * or a JSON body that does not fit its schema, fails the test that caused it.
 */
type Json = Record<string, unknown>;

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;

interface Api {
  /** Stripped from the path before matching the document's paths ('' when they are written in full). */
  prefix: string;
  /** Which request paths the document describes. */
  covers: (urlPath: string) => boolean;
  spec: Json;
  templates: { template: string; regex: RegExp; params: number }[];
}

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
addFormats(ajv);
const apis: Api[] = [];

function load(file: string, prefix: string, covers: (urlPath: string) => boolean): Api {
  const spec = parseYaml(readFileSync(path.resolve(file), 'utf8')) as Json;
  const id = `spec:${prefix}`;
  ajv.removeSchema(id);
  ajv.addSchema({ ...spec, $id: id }, id);
  const templates = Object.keys(spec.paths as Json).map((template) => {
    const regex = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}/?$`);
    return { template, regex, params: (template.match(/\{/g) ?? []).length };
  }).sort((a, b) => a.params - b.params);
  return { prefix, covers, spec: { ...spec, $id: id }, templates };
}

/** One mechanism for both documents, chosen by path: `/v1...` the workflow API, `/` and `/v3...` the print API. */
function apiFor(urlPath: string): Api | undefined {
  if (apis.length === 0) {
    apis.push(load('openapi/workflow-api.yaml', '/v1', (p) => p === '/v1' || p.startsWith('/v1/')));
    apis.push(load('openapi/print-api.yaml', '', (p) => p === '/' || p === '/v3' || p.startsWith('/v3/')));
  }
  return apis.find((a) => a.covers(urlPath));
}

const pointer = (parts: string[]) => `#/${parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;

function resolve(api: Api, node: Json): Json {
  let n = node;
  for (let i = 0; i < 10 && typeof n.$ref === 'string'; i++) {
    const parts = (n.$ref as string).replace(/^#\//, '').split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    n = parts.reduce<unknown>((acc, k) => (acc as Json)[k], api.spec) as Json;
  }
  return n;
}

export interface CheckedResponse {
  status: number;
  headers: Headers;
  contentType: string;
  body: unknown;
}

/** Throws with a readable message when the response does not match the document. */
export function checkContract(method: string, urlPath: string, res: CheckedResponse): void {
  if (method.toUpperCase() === 'HEAD') {
    // HEAD answers like GET without a body: the GET operation's status and headers apply
    if (res.body !== undefined && res.body !== '') throw new Error(`contract: HEAD ${urlPath} answered with a body`);
    return check('GET', urlPath, { ...res, body: undefined, contentType: '' }, true);
  }
  check(method, urlPath, res, false);
}

function check(method: string, urlPath: string, res: CheckedResponse, head: boolean): void {
  const checkError = (api: Api, r: CheckedResponse) => (head ? undefined : checkErrorBody(api, r));
  const api = apiFor(urlPath);
  if (!api) return; // routes outside the APIs (health, docs, dev issuer)
  const rel = urlPath.slice(api.prefix.length) || '/';
  const match = api.templates.find((t) => t.regex.test(rel));
  if (!match) {
    if (res.status === 404 || res.status === 401) return checkError(api, res);
    throw new Error(`contract: ${method} ${urlPath} answered ${res.status} but ${rel} is not in the OpenAPI document`);
  }
  const item = (api.spec.paths as Json)[match.template] as Json;
  const op = item[method.toLowerCase()] as Json | undefined;
  if (!op) {
    if ([401, 404, 405].includes(res.status)) return checkError(api, res);
    throw new Error(`contract: ${method} ${match.template} is not documented (status ${res.status})`);
  }
  const responses = op.responses as Json;
  const key = String(res.status);
  const respRef = responses[key] ?? responses[`${key[0]}XX`] ?? responses.default;
  if (!respRef) throw new Error(`contract: ${method} ${match.template} answered ${res.status}, which the document does not list`);
  const resp = resolve(api, respRef as Json);
  const content = resp.content as Json | undefined;
  if (!content) {
    if (res.body !== undefined && res.body !== '' && res.status !== 304) {
      throw new Error(`contract: ${method} ${match.template} ${res.status} has a body but the document declares none`);
    }
    return;
  }
  if (!res.contentType.includes('json')) return; // binary bodies: the document declares the media type
  const mediaKey = Object.keys(content).find((k) => k.includes('json'));
  if (!mediaKey) throw new Error(`contract: ${method} ${match.template} ${res.status} answered JSON but the document declares ${Object.keys(content).join(', ')}`);
  const respPath = typeof (respRef as Json).$ref === 'string'
    ? [...((respRef as Json).$ref as string).replace(/^#\//, '').split('/').map((p) => p.replace(/~1/g, '/')), 'content', mediaKey, 'schema']
    : ['paths', match.template, method.toLowerCase(), 'responses', Object.keys(responses).find((k) => responses[k] === respRef)!, 'content', mediaKey, 'schema'];
  const validate = ajv.getSchema(`${api.spec.$id as string}${pointer(respPath)}`);
  if (!validate) throw new Error(`contract: no schema at ${pointer(respPath)}`);
  if (!validate(res.body)) {
    throw new Error(`contract: ${method} ${match.template} ${res.status} body does not match the document: ${ajv.errorsText(validate.errors)}\nbody: ${JSON.stringify(res.body).slice(0, 600)}`);
  }
}

function checkErrorBody(api: Api, res: CheckedResponse): void {
  const validate = ajv.getSchema(`${api.spec.$id as string}#/components/schemas/Error`);
  if (!validate) throw new Error('contract: the document has no components/schemas/Error');
  if (!validate(res.body)) throw new Error(`contract: error body does not match Error: ${ajv.errorsText(validate.errors)}`);
}
