import type { Action, Area } from '../../src/config/schema.js';

/**
 * The authorization matrix's table (authorization-matrix.test.ts): one row per
 * route of both APIs, keyed `METHOD /path/:template` exactly as the routers
 * spell it. A route added to a router without a row here fails the matrix,
 * and so does a row whose route is gone. Add a row: the rights it needs
 * (every `[area, action]` pair; none: any caller with a known role), the
 * request that reaches them with the fixtures, and whether it names an
 * object of the fixtures' owner (another user must not see it).
 */

/** Objects created for each pass, all owned by the pass's user (`ann`) unless shared. */
export interface Fixtures {
  marker: string;
  doc: string;
  collection: string;
  cid: string;
  tid: string;
  inputItem: string;
  lid: string;
  listItem: string;
  pid: string;
  /** A message to the owner. */
  message: string;
  /** Shared (created by an admin): a printer, a flow, a configuration item. */
  printer: string;
  flow: string;
  configPath: string;
  printerDir: string;
  /** A print job of the owner. */
  job: string;
}

export interface Request {
  path: string;
  json?: unknown;
  body?: string;
  headers?: Record<string, string>;
}

export interface Row {
  /** Rights the route needs; empty: any known role. */
  needs: readonly (readonly [Area, Action])[];
  req: (f: Fixtures) => Request;
  /** The request names an object of the fixtures' owner: another user gets 403 or 404 and never its data. */
  owned?: boolean;
  /** Refused for everybody whatever the role (the read-only default panels): this status. */
  always?: number;
  /** An endless answer (the event stream): its head and first bytes are read, then the request is aborted. */
  stream?: boolean;
}

const doc = (f: Fixtures) => `/v1/services/store/repo/${f.doc}`;
const task = (f: Fixtures) => `/v1/services/work/tasks/${f.tid}`;
const list = (f: Fixtures) => `/v1/lists/${f.lid}`;
const printer = (f: Fixtures) => `/v3/printers/${encodeURIComponent(f.printer)}`;
const job = (f: Fixtures) => `/v3/jobs/${f.job}`;
const R = (area: Area, ...actions: Action[]) => actions.map((a) => [area, a] as const);

const pdf = { body: '%PDF-1.4 matrix', headers: { 'content-type': 'application/pdf' } };
const both = (path: string, row: Row): [string, Row][] => [[path, row], [path.replace(/ (\/v3\/\w+)$/, ' $1/'), row]];

export const ROWS: ReadonlyMap<string, Row> = new Map<string, Row>([
  // --- workflow API: services, repository, commands
  ['GET /v1/services', { needs: [], req: () => ({ path: '/v1/services' }) }],
  ['GET /v1/services/:sid', { needs: [], req: () => ({ path: '/v1/services/store' }) }],
  ['POST /v1/services/:sid/repo/command', { needs: R('documents', 'write'), owned: true, req: (f) => ({ path: '/v1/services/store/repo/command', json: { command: 'copy', parameters: { source: f.doc, target: f.collection, name: 'copy' } } }) }],
  ['GET /v1/services/:sid/repo/command/:cid', { needs: R('documents', 'read'), owned: true, req: (f) => ({ path: `/v1/services/store/repo/command/${f.cid}` }) }],
  ['POST /v1/repo/inactives', { needs: R('documents', 'read'), req: (f) => ({ path: '/v1/repo/inactives', json: [f.doc] }) }],
  ['GET /v1/services/:sid/repo', { needs: R('documents', 'read'), req: () => ({ path: '/v1/services/store/repo?scope=root' }) }],
  ['POST /v1/services/:sid/repo', { needs: R('documents', 'write'), req: () => ({ path: '/v1/services/store/repo', json: { name: `new-${Math.random()}`, type: 'document' } }) }],
  ['GET /v1/services/:sid/repo/:uuid', { needs: R('documents', 'read'), owned: true, req: (f) => ({ path: doc(f) }) }],
  ['PUT /v1/services/:sid/repo/:uuid', { needs: R('documents', 'write'), owned: true, req: (f) => ({ path: doc(f), json: { name: `doc-${f.marker}`, metadata: { v: 2 } } }) }],
  ['PATCH /v1/services/:sid/repo/:uuid', { needs: R('documents', 'write'), owned: true, req: (f) => ({ path: doc(f), json: { metadata: { v: 3 } } }) }],
  ['POST /v1/services/:sid/repo/:uuid', { needs: R('documents', 'write'), owned: true, req: (f) => ({ path: `/v1/services/store/repo/${f.collection}`, json: { name: `in-${Math.random()}`, type: 'document' } }) }],
  ['DELETE /v1/services/:sid/repo/:uuid', { needs: R('documents', 'delete'), owned: true, req: (f) => ({ path: doc(f) }) }],
  ['GET /v1/services/:sid/repo/:uuid/children', { needs: R('documents', 'read'), owned: true, req: (f) => ({ path: `/v1/services/store/repo/${f.collection}/children` }) }],
  ['GET /v1/services/:sid/repo/:uuid/content', { needs: R('documents', 'read'), owned: true, req: (f) => ({ path: `${doc(f)}/content` }) }],
  ['PUT /v1/services/:sid/repo/:uuid/content', { needs: R('documents', 'write'), owned: true, req: (f) => ({ path: `${doc(f)}/content`, body: `content-${f.marker}`, headers: { 'content-type': 'text/plain' } }) }],
  ['DELETE /v1/services/:sid/repo/:uuid/content', { needs: R('documents', 'write'), owned: true, req: (f) => ({ path: `${doc(f)}/content` }) }],
  ['GET /v1/services/:sid/repo/:uuid/preview', { needs: R('documents', 'read'), owned: true, req: (f) => ({ path: `${doc(f)}/preview` }) }],
  // --- tasks
  ['GET /v1/tasks', { needs: R('tasks', 'read'), req: (f) => ({ path: `/v1/tasks?name=${f.marker}` }) }],
  ['GET /v1/services/:sid/tasks', { needs: R('tasks', 'read'), req: () => ({ path: '/v1/services/work/tasks' }) }],
  ['POST /v1/services/:sid/tasks', { needs: R('tasks', 'write'), req: () => ({ path: '/v1/services/work/tasks', json: { name: 'new task' } }) }],
  ['GET /v1/services/:sid/tasks/:tid', { needs: R('tasks', 'read'), owned: true, req: (f) => ({ path: task(f) }) }],
  ['PUT /v1/services/:sid/tasks/:tid', { needs: R('tasks', 'write'), owned: true, req: (f) => ({ path: task(f), json: { name: f.marker, metadata: { v: 2 } } }) }],
  ['PATCH /v1/services/:sid/tasks/:tid', { needs: R('tasks', 'write'), owned: true, req: (f) => ({ path: task(f), json: { metadata: { v: 3 } } }) }],
  ['DELETE /v1/services/:sid/tasks/:tid', { needs: R('tasks', 'delete'), owned: true, req: (f) => ({ path: task(f) }) }],
  ['GET /v1/services/:sid/tasks/:tid/input', { needs: R('tasks', 'read'), owned: true, req: (f) => ({ path: `${task(f)}/input?embed=items` }) }],
  ['PUT /v1/services/:sid/tasks/:tid/input', { needs: R('tasks', 'write'), owned: true, req: (f) => ({ path: `${task(f)}/input`, json: { metadata: { m: f.marker } } }) }],
  ['PATCH /v1/services/:sid/tasks/:tid/input', { needs: R('tasks', 'write'), owned: true, req: (f) => ({ path: `${task(f)}/input`, json: { metadata: { p: 1 } } }) }],
  ['POST /v1/services/:sid/tasks/:tid/input', { needs: R('tasks', 'write'), owned: true, req: (f) => ({ path: `${task(f)}/input`, json: { href: 'https://example.com/more.pdf' } }) }],
  ['GET /v1/services/:sid/tasks/:tid/input/:id', { needs: R('tasks', 'read'), owned: true, req: (f) => ({ path: `${task(f)}/input/${f.inputItem}` }) }],
  ['PUT /v1/services/:sid/tasks/:tid/input/:id', { needs: R('tasks', 'write'), owned: true, req: (f) => ({ path: `${task(f)}/input/${f.inputItem}`, json: { href: 'https://example.com/x.pdf', metadata: { m: 1 } } }) }],
  ['PATCH /v1/services/:sid/tasks/:tid/input/:id', { needs: R('tasks', 'write'), owned: true, req: (f) => ({ path: `${task(f)}/input/${f.inputItem}`, json: { metadata: { m: 2 } } }) }],
  ['DELETE /v1/services/:sid/tasks/:tid/input/:id', { needs: R('tasks', 'write'), owned: true, req: (f) => ({ path: `${task(f)}/input/${f.inputItem}` }) }],
  ['GET /v1/services/:sid/tasks/:tid/output', { needs: R('tasks', 'read'), owned: true, req: (f) => ({ path: `${task(f)}/output` }) }],
  ['GET /v1/services/:sid/tasks/:tid/output/:id', { needs: R('tasks', 'read'), owned: true, req: (f) => ({ path: `${task(f)}/output/${f.inputItem}` }) }],
  ['GET /v1/tasks/:tid/input/:id/content', { needs: [...R('tasks', 'read'), ...R('documents', 'read')], owned: true, req: (f) => ({ path: `/v1/tasks/${f.tid}/input/${f.inputItem}/content` }) }],
  ['POST /v1/services/:sid/tasks/:tid/action', { needs: R('tasks', 'act'), owned: true, req: (f) => ({ path: `${task(f)}/action`, json: { action: 'pause' } }) }],
  // --- lists
  ['GET /v1/lists', { needs: R('lists', 'read'), req: () => ({ path: '/v1/lists' }) }],
  ['POST /v1/lists', { needs: R('lists', 'write'), req: () => ({ path: '/v1/lists', json: { name: 'new list' } }) }],
  ['GET /v1/lists/:lid', { needs: R('lists', 'read'), owned: true, req: (f) => ({ path: `${list(f)}?embed=items` }) }],
  ['PUT /v1/lists/:lid', { needs: R('lists', 'write'), owned: true, req: (f) => ({ path: list(f), json: { name: f.marker } }) }],
  ['PATCH /v1/lists/:lid', { needs: R('lists', 'write'), owned: true, req: (f) => ({ path: list(f), json: { metadata: { p: 1 } } }) }],
  ['DELETE /v1/lists/:lid', { needs: R('lists', 'delete'), owned: true, req: (f) => ({ path: list(f) }) }],
  ['GET /v1/lists/:lid/items', { needs: R('lists', 'read'), owned: true, req: (f) => ({ path: `${list(f)}/items?embed=items` }) }],
  ['POST /v1/lists/:lid/items', { needs: R('lists', 'write'), owned: true, req: (f) => ({ path: `${list(f)}/items`, json: { href: 'https://example.com/l.pdf' } }) }],
  ['GET /v1/lists/:lid/items/:id', { needs: R('lists', 'read'), owned: true, req: (f) => ({ path: `${list(f)}/items/${f.listItem}` }) }],
  ['PUT /v1/lists/:lid/items/:id', { needs: R('lists', 'write'), owned: true, req: (f) => ({ path: `${list(f)}/items/${f.listItem}`, json: { metadata: { m: 1 } } }) }],
  ['PATCH /v1/lists/:lid/items/:id', { needs: R('lists', 'write'), owned: true, req: (f) => ({ path: `${list(f)}/items/${f.listItem}`, json: { metadata: { m: 2 } } }) }],
  ['DELETE /v1/lists/:lid/items/:id', { needs: R('lists', 'write'), owned: true, req: (f) => ({ path: `${list(f)}/items/${f.listItem}` }) }],
  // --- messages, functions
  ['GET /v1/messages', { needs: R('messages', 'read'), req: () => ({ path: '/v1/messages' }) }],
  ['POST /v1/messages', { needs: R('messages', 'write'), req: () => ({ path: '/v1/messages', json: { text: 'hello' } }) }],
  ['GET /v1/messages/:uuid', { needs: R('messages', 'read'), owned: true, req: (f) => ({ path: `/v1/messages/${f.message}` }) }],
  ['PATCH /v1/messages/:uuid', { needs: R('messages', 'write'), owned: true, req: (f) => ({ path: `/v1/messages/${f.message}`, json: { text: 'changed' } }) }],
  ['DELETE /v1/messages/:uuid', { needs: R('messages', 'delete'), owned: true, req: (f) => ({ path: `/v1/messages/${f.message}` }) }],
  ['GET /v1/services/:sid/function', { needs: [], req: () => ({ path: '/v1/services/work/function' }) }],
  ['POST /v1/services/:sid/function/:fid', { needs: [], req: () => ({ path: '/v1/services/work/function/echo', json: { text: 'hi' } }) }],
  // --- the event stream (any known role; each event goes only to who may see its object: test/events/)
  ['GET /v1/events', { needs: [], stream: true, req: () => ({ path: '/v1/events' }) }],
  // --- panels, configuration tree, sessions
  ['GET /v1/ui', { needs: R('panels', 'read'), req: () => ({ path: '/v1/ui' }) }],
  ['GET /v1/ui/:pid', { needs: R('panels', 'read'), req: () => ({ path: '/v1/ui/tasks' }) }],
  ...(['POST', 'PUT', 'PATCH', 'DELETE'] as const).flatMap((m): [string, Row][] => [
    [`${m} /v1/ui`, { needs: R('panels', 'read'), always: 403, req: () => ({ path: '/v1/ui', json: m === 'DELETE' ? undefined : { name: 'x' } }) }],
    [`${m} /v1/ui/:pid`, { needs: R('panels', 'read'), always: 403, req: () => ({ path: '/v1/ui/tasks', json: m === 'DELETE' ? undefined : { name: 'x' } }) }],
  ]),
  ['GET /v1/panels', { needs: R('panels', 'read'), req: () => ({ path: '/v1/panels' }) }],
  ['POST /v1/panels', { needs: R('panels', 'write'), req: () => ({ path: '/v1/panels', json: { type: 'new panel' } }) }],
  ['GET /v1/panels/:pid', { needs: R('panels', 'read'), owned: true, req: (f) => ({ path: `/v1/panels/${f.pid}` }) }],
  ['PUT /v1/panels/:pid', { needs: R('panels', 'write'), owned: true, req: (f) => ({ path: `/v1/panels/${f.pid}`, json: { kind: f.marker } }) }],
  ['DELETE /v1/panels/:pid', { needs: R('panels', 'delete'), owned: true, req: (f) => ({ path: `/v1/panels/${f.pid}` }) }],
  ['GET /v1/config', { needs: R('configuration', 'read'), req: (f) => ({ path: `/v1/config?path=${f.configPath}` }) }],
  ['PUT /v1/config', { needs: R('configuration', 'write'), req: (f) => ({ path: `/v1/config?path=${f.configPath}`, json: { v: 2 } }) }],
  ['DELETE /v1/config', { needs: R('configuration', 'delete'), req: (f) => ({ path: `/v1/config?path=${f.configPath}` }) }],
  ['GET /v1/sessions', { needs: R('sessions', 'read'), req: () => ({ path: '/v1/sessions' }) }],
  // --- print API: jobs
  ...both('GET /v3/jobs', { needs: R('jobs', 'read'), req: () => ({ path: '/v3/jobs/' }) }),
  ...both('POST /v3/jobs', { needs: R('jobs', 'write'), req: (f) => ({ path: `/v3/jobs/?printer=${encodeURIComponent(f.printer)}`, ...pdf }) }),
  ['GET /v3/jobs/metadata', { needs: [], req: () => ({ path: '/v3/jobs/metadata' }) }],
  ['GET /v3/jobs/:id', { needs: R('jobs', 'read'), owned: true, req: (f) => ({ path: job(f) }) }],
  ['DELETE /v3/jobs/:id', { needs: R('jobs', 'delete'), owned: true, req: (f) => ({ path: job(f) }) }],
  ...(['cancel', 'pause', 'resume', 'repeat'] as const).map((op): [string, Row] =>
    [`PUT /v3/jobs/:id/${op}`, { needs: R('jobs', 'act'), owned: true, req: (f) => ({ path: `${job(f)}/${op}` }) }]),
  ['PUT /v3/jobs/:id/move', { needs: R('jobs', 'act'), owned: true, req: (f) => ({ path: `${job(f)}/move`, json: { printer: f.printer } }) }],
  ...(['logs', 'logfile', 'collect', 'pageinfo'] as const).map((sub): [string, Row] =>
    [`GET /v3/jobs/:id/${sub}`, { needs: R('jobs', 'read'), owned: true, req: (f) => ({ path: `${job(f)}/${sub}` }) }]),
  ['PUT /v3/jobs/:id/tempfiles', { needs: R('jobs', 'act'), owned: true, req: (f) => ({ path: `${job(f)}/tempfiles`, json: { keep: true } }) }],
  // --- printers (shared objects)
  ...both('GET /v3/printers', { needs: R('printers', 'read'), req: () => ({ path: '/v3/printers/' }) }),
  ...both('POST /v3/printers', { needs: R('printers', 'write'), req: (f) => ({ path: '/v3/printers/', json: { name: `new-${Math.random()}`, connection: `file://${f.printerDir}` } }) }),
  ['GET /v3/printers/metadata', { needs: [], req: () => ({ path: '/v3/printers/metadata' }) }],
  ['GET /v3/printers/:printerName', { needs: R('printers', 'read'), req: (f) => ({ path: printer(f) }) }],
  ['PUT /v3/printers/:printerName', { needs: R('printers', 'write'), req: (f) => ({ path: printer(f), json: { connection: `file://${f.printerDir}`, description: 'changed' } }) }],
  ['DELETE /v3/printers/:printerName', { needs: R('printers', 'delete'), req: (f) => ({ path: printer(f) }) }],
  ['PUT /v3/printers/:printerName/checkPhysical', { needs: R('printers', 'act'), req: (f) => ({ path: `${printer(f)}/checkPhysical` }) }],
  ['PUT /v3/printers/:printerName/createTestJob', { needs: [...R('printers', 'act'), ...R('jobs', 'write')], req: (f) => ({ path: `${printer(f)}/createTestJob` }) }],
  ['GET /v3/printers/:printerName/logs', { needs: R('printers', 'read'), req: (f) => ({ path: `${printer(f)}/logs` }) }],
  ['PUT /v3/printers/:printerName/message', { needs: R('printers', 'act'), req: (f) => ({ path: `${printer(f)}/message`, json: { text: 'hello' } }) }],
  ['DELETE /v3/printers/:printerName/message', { needs: R('printers', 'act'), req: (f) => ({ path: `${printer(f)}/message` }) }],
  ['PUT /v3/printers/:printerName/pause', { needs: R('printers', 'act'), req: (f) => ({ path: `${printer(f)}/pause` }) }],
  ['PUT /v3/printers/:printerName/resume', { needs: R('printers', 'act'), req: (f) => ({ path: `${printer(f)}/resume` }) }],
  ['PUT /v3/printers/:printerName/redirect', { needs: R('printers', 'act'), req: (f) => ({ path: `${printer(f)}/redirect`, json: { target: null } }) }],
  ['PUT /v3/printers/:printerName/runtime', { needs: R('printers', 'read'), req: (f) => ({ path: `${printer(f)}/runtime` }) }],
  // --- flows, configuration keys, roles, statistics
  ...both('GET /v3/flows', { needs: R('flows', 'read'), req: () => ({ path: '/v3/flows/' }) }),
  ...both('POST /v3/flows', { needs: R('flows', 'write'), req: () => ({ path: '/v3/flows/', json: { name: `f-${Math.random()}`, steps: [{ use: 'rotate', with: { degrees: 90 } }] } }) }),
  ['GET /v3/flows/:name', { needs: R('flows', 'read'), req: (f) => ({ path: `/v3/flows/${f.flow}` }) }],
  ['DELETE /v3/flows/:name', { needs: R('flows', 'delete'), req: (f) => ({ path: `/v3/flows/${f.flow}` }) }],
  ...both('GET /v3/configs', { needs: R('configuration', 'read'), req: () => ({ path: '/v3/configs/' }) }),
  ...both('PUT /v3/configs', { needs: R('configuration', 'write'), req: () => ({ path: '/v3/configs/', json: { matrix: 1 } }) }),
  ...both('DELETE /v3/configs', { needs: R('configuration', 'delete'), req: () => ({ path: '/v3/configs/?key=matrix' }) }),
  ['GET /v3/auth/userroles', { needs: [], req: () => ({ path: '/v3/auth/userroles' }) }],
  ...(['job-count', 'job-series', 'printer-count'] as const).map((s): [string, Row] =>
    [`GET /v3/statistics/${s}`, { needs: R('statistics', 'read'), req: () => ({ path: `/v3/statistics/${s}` }) }]),
  ['GET /v3/statistics/metadata', { needs: R('statistics', 'read'), req: () => ({ path: '/v3/statistics/metadata' }) }],
]);
