import Router from '@koa/router';
import type { Context } from 'koa';
import type { Services } from '../../runtime/services.js';
import { AppError } from '../../errors/app-error.js';
import { parseListQuery, single } from '../../query/list-query.js';
import { jsonBody } from '../../api/middleware/json-body.js';
import { requestBody } from '../../api/middleware/body-timeout.js';
import { body, param, principal, query, uuidParam } from '../../api/context.js';
import { embedParam } from '../../api/embed.js';
import { jsonArrayBody } from '../../api/json-array-stream.js';
import { validate } from '../../api/validate.js';
import { importFormat } from '../../formats/index.js';
import type { ItemRow, ListRow } from '../lists/store/list-store.js';
import { presentTask, presentTaskItem, presentTaskList, type TaskListKind } from './present.js';
import { searchBodies } from './search-bodies.js';
import type { TaskRow } from './store/task-store.js';
import {
  appendItemSchema, createTaskSchema, LIST_EMBEDS, patchItemSchema, patchListSchema, patchTaskSchema,
  replaceItemSchema, replaceListSchema, replaceTaskSchema, TASK_EMBEDS, type TaskEmbed,
} from './schema.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A boolean query flag: absent, `false`/`0` -> false; `true`/`1`/empty -> true; anything else 400. */
function flag(ctx: Context, name: string): boolean {
  const v = single(query(ctx), name);
  if (v === undefined || v === 'false' || v === '0') return false;
  if (v === 'true' || v === '1' || v === '') return true;
  throw new AppError('INVALID_QUERY', `${name} must be true or false`, { parameter: name });
}

/** The tasks rows of the Document Workflow API (spec: Tasks), except the action route (actions). */
export function taskRoutes(s: Services): Router {
  const router = new Router();
  const json = jsonBody(s.config.server.jsonLimit);
  const optionalJson = jsonBody(s.config.server.jsonLimit, { optional: true });
  const tasks = s.tasks;
  const taskLists = s.taskLists;
  const embedItems = s.config.tasks.searchEmbedItems;

  const present = async (t: TaskRow, embed: ReadonlySet<TaskEmbed>, full: boolean) => {
    const parts = await taskLists.embedFor(t, { input: embed.has('input'), inputItems: embed.has('inputlist'), output: embed.has('output') });
    return presentTask(t, { embed, full, ...parts });
  };

  const search = (sid: (ctx: Context) => string | undefined, emptyIs404: boolean) => async (ctx: Context) => {
    const p = principal(ctx);
    const embed = embedParam(ctx, TASK_EMBEDS);
    const count = flag(ctx, 'inlineCount');
    const doc = single(query(ctx), 'inputDocument');
    if (doc !== undefined && !UUID.test(doc)) throw new AppError('INVALID_UUID', `inputDocument "${doc.slice(0, 80)}" is not a UUID`, { parameter: 'inputDocument' });
    const q = parseListQuery(query(ctx), ['embed', 'inlineCount', 'inputDocument']);
    const inputDocument = doc?.toLowerCase();
    if (count) {
      ctx.body = { count: await tasks.count(p, sid(ctx), q, inputDocument) };
      return;
    }
    // the page's tids first, then the tasks a group at a time, streamed, each embedded list cut at
    // `tasks.searchEmbedItems`; an error up to the first task still answers with an error body
    const tids = await tasks.search(p, sid(ctx), q, inputDocument);
    if (tids.length === 0 && emptyIs404) throw new AppError('NO_MATCHING_TASKS', 'no task matches the query', { offset: q.offset });
    const answer = await jsonArrayBody(searchBodies(tasks, taskLists, tids, embed, embedItems), (err) =>
      s.log.error({ err, method: ctx.method, path: ctx.path }, 'task search failed after its answer began: the response is cut'));
    ctx.type = 'application/json';
    ctx.body = answer;
  };

  router.get('/tasks', search(() => undefined, true));
  router.get('/services/:sid/tasks', search((ctx) => param(ctx, 'sid'), false));

  router.post('/services/:sid/tasks', async (ctx) => {
    const p = principal(ctx);
    const sid = param(ctx, 'sid');
    tasks.facet(sid); // 404 before the body is read
    const owner = s.policy.ownerFor(p, 'tasks', ctx.get('x-owner') || undefined);
    const format = importFormat(ctx.get('content-type') || undefined);
    if (format.name === 'json') {
      await json(ctx, async () => {});
      const task = await taskLists.create(p, sid, validate(createTaskSchema, body(ctx)), owner);
      ctx.body = await present(task, new Set(), true);
      return;
    }
    // CSV or RList: parsed as it streams in, inserted in the task's transaction
    const task = await taskLists.createFromList(p, sid, format, requestBody(ctx), owner);
    ctx.body = await present(task, new Set(), true);
  });

  router.get('/services/:sid/tasks/:tid', async (ctx) => {
    const embed = embedParam(ctx, TASK_EMBEDS);
    const force = flag(ctx, 'force');
    const [p, sid, tid] = [principal(ctx), param(ctx, 'sid'), uuidParam(ctx, 'tid')];
    const task = force ? await tasks.refresh(p, sid, tid) : await tasks.get(p, sid, tid);
    // one task: `input` is the spec's only input embed here, so it carries the items (as `output` does)
    const lists = { input: embed.has('input'), inputItems: embed.has('input') || embed.has('inputlist'), output: embed.has('output') };
    // a poll (no list embedded) answers from the task's row alone
    const parts = lists.input || lists.inputItems || lists.output ? await taskLists.embedFor(task, lists) : {};
    ctx.body = presentTask(task, { embed, full: true, inputWithItems: true, ...parts });
  });

  for (const [method, schema, mode] of [['put', replaceTaskSchema, 'replace'], ['patch', patchTaskSchema, 'merge']] as const) {
    router[method]('/services/:sid/tasks/:tid', json, async (ctx) => {
      const tid = uuidParam(ctx, 'tid');
      const input = validate(schema, body(ctx));
      if (input.tid !== undefined && String(input.tid).toLowerCase() !== tid) throw new AppError('UUID_IMMUTABLE', 'the tid of a task cannot be changed');
      const task = await tasks.update(principal(ctx), param(ctx, 'sid'), tid, input, mode);
      ctx.body = await present(task, new Set(), true);
    });
  }

  router.delete('/services/:sid/tasks/:tid', async (ctx) => {
    await tasks.remove(principal(ctx), param(ctx, 'sid'), uuidParam(ctx, 'tid'));
    ctx.status = 204;
  });

  // ---- the input and output lists

  const presentList = async (task: TaskRow, kind: TaskListKind, list: ListRow, withItems: boolean) =>
    presentTaskList(task, kind, list, withItems ? await taskLists.items(list) : undefined);

  for (const kind of ['input', 'output'] as const) {
    router.get(`/services/:sid/tasks/:tid/${kind}`, async (ctx) => {
      const embed = embedParam(ctx, LIST_EMBEDS);
      const { task, list } = await taskLists.get(principal(ctx), param(ctx, 'sid'), uuidParam(ctx, 'tid'), kind);
      ctx.body = await presentList(task, kind, list, embed.has('items'));
    });
    router.get(`/services/:sid/tasks/:tid/${kind}/:id`, async (ctx) => {
      const { task, item } = await taskLists.item(principal(ctx), param(ctx, 'sid'), uuidParam(ctx, 'tid'), kind, uuidParam(ctx, 'id'));
      ctx.body = presentTaskItem(task, kind, item);
    });
  }

  router.put('/services/:sid/tasks/:tid/input', json, async (ctx) => {
    const embed = embedParam(ctx, LIST_EMBEDS);
    const input = validate(replaceListSchema, body(ctx));
    const sid = param(ctx, 'sid');
    const tid = uuidParam(ctx, 'tid');
    const list = await taskLists.replaceMetadata(principal(ctx), sid, tid, input.metadata);
    ctx.body = await presentList(await tasks.get(principal(ctx), sid, tid), 'input', list, embed.has('items'));
  });

  router.patch('/services/:sid/tasks/:tid/input', json, async (ctx) => {
    const embed = embedParam(ctx, LIST_EMBEDS);
    const input = validate(patchListSchema, body(ctx));
    const sid = param(ctx, 'sid');
    const tid = uuidParam(ctx, 'tid');
    const placements = input.embedded?.listItems.map((i) => ({ id: i.id.toLowerCase(), index: i.index }));
    const list = await taskLists.patch(principal(ctx), sid, tid, { metadata: input.metadata, placements });
    ctx.body = await presentList(await tasks.get(principal(ctx), sid, tid), 'input', list, embed.has('items'));
  });

  router.post('/services/:sid/tasks/:tid/input', optionalJson, async (ctx) => {
    const href = single(query(ctx), 'href');
    const raw = body(ctx);
    if (href !== undefined && raw !== undefined) throw new AppError('HREF_AND_BODY', 'give the item either as ?href= or as a JSON body, not both');
    if (href === undefined && raw === undefined) throw new AppError('BODY_REQUIRED', 'give the item as ?href= or as a JSON body { href, metadata }');
    const item = raw !== undefined ? validate(appendItemSchema, raw) : { href: validate(appendItemSchema.shape.href, href, 'query.href'), metadata: {} };
    const sid = param(ctx, 'sid');
    const tid = uuidParam(ctx, 'tid');
    const row = await taskLists.append(principal(ctx), sid, tid, item);
    ctx.body = presentItem(tid, sid, row);
  });

  const presentItem = (tid: string, sid: string, row: ItemRow) => presentTaskItem({ tid, sid }, 'input', row);

  for (const [method, schema, mode] of [['put', replaceItemSchema, 'replace'], ['patch', patchItemSchema, 'merge']] as const) {
    router[method]('/services/:sid/tasks/:tid/input/:id', json, async (ctx) => {
      const input = validate(schema, body(ctx));
      const sid = param(ctx, 'sid');
      const tid = uuidParam(ctx, 'tid');
      const row = await taskLists.updateItem(principal(ctx), sid, tid, uuidParam(ctx, 'id'), input, mode);
      ctx.body = presentItem(tid, sid, row);
    });
  }

  router.delete('/services/:sid/tasks/:tid/input/:id', async (ctx) => {
    await taskLists.deleteItem(principal(ctx), param(ctx, 'sid'), uuidParam(ctx, 'tid'), uuidParam(ctx, 'id'));
    ctx.status = 204;
  });

  router.get('/tasks/:tid/input/:id/content', async (ctx) => {
    const { stream, length } = await taskLists.openContent(principal(ctx), uuidParam(ctx, 'tid'), uuidParam(ctx, 'id'));
    ctx.type = 'application/octet-stream';
    if (length !== undefined) ctx.length = length;
    ctx.body = stream;
  });

  return router;
}
