import Router from '@koa/router';
import type { Context } from 'koa';
import type { Services } from '../../runtime/services.js';
import { AppError } from '../../errors/app-error.js';
import { hasNul, nulRefused } from '../../errors/input-errors.js';
import { exportFormat, writeList } from '../../formats/index.js';
import { parseListQuery, single } from '../../query/list-query.js';
import { jsonBody } from '../../api/middleware/json-body.js';
import { requestBody } from '../../api/middleware/body-timeout.js';
import { body, principal, query, uuidParam } from '../../api/context.js';
import { validate } from '../../api/validate.js';
import { embeddedParts, presentItem, presentList, streamListJson } from './present.js';
import { HREF_MAX, LIST_EMBEDS, type ListEmbed, itemSchema, patchItemSchema, patchListSchema, replaceItemSchema, replaceListSchema } from './schema.js';

/** Items embedded per list in `GET /lists?embed=items`; the rest is paged through `/lists/{lid}/items`. */
const EMBEDDED_ITEMS = 100;

function embedParam(ctx: Context, allowed: readonly ListEmbed[]): Set<ListEmbed> {
  const raw = ctx.query.embed;
  const values = (Array.isArray(raw) ? raw : raw ? [raw] : []).flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
  for (const v of values) {
    if (!allowed.includes(v as ListEmbed)) throw new AppError('INVALID_EMBED', `embed "${v}" is not offered here (allowed: ${allowed.join(', ')})`);
  }
  return new Set(values as ListEmbed[]);
}

/** `?href=`: an item's document reference (a relative URL), or undefined. */
function hrefParam(ctx: Context): string | undefined {
  const href = single(query(ctx), 'href');
  if (href === undefined) return undefined;
  if (hasNul(href)) throw nulRefused('href');
  if (href === '' || href.length > HREF_MAX) throw new AppError('INVALID_QUERY', `href must be 1-${HREF_MAX} characters`, { parameter: 'href' });
  return href;
}

function required(given: unknown, message: string): unknown {
  if (given === undefined) throw new AppError('BODY_REQUIRED', message);
  return given;
}

/** True when the request carries a body (a length above zero, or chunked). */
function hasBody(ctx: Context): boolean {
  const length = ctx.request.length;
  return (length !== undefined && length > 0) || ctx.get('transfer-encoding') !== '';
}

/** The per-user lists (spec: Lists). Export and import by media type: `src/formats/`. */
export function listRoutes(s: Services): Router {
  const router = new Router();
  const lists = s.lists;
  const json = jsonBody(s.config.server.jsonLimit);
  const optionalJson = jsonBody(s.config.server.jsonLimit, { optional: true });

  router.get('/lists', async (ctx) => {
    const embed = embedParam(ctx, LIST_EMBEDS);
    const q = parseListQuery(query(ctx), ['embed']);
    const p = principal(ctx);
    const rows = await lists.list(p, q);
    const items = embed.has('items') ? await lists.firstItems(rows.map((l) => l.lid), EMBEDDED_ITEMS) : undefined;
    ctx.body = rows.map((l) => {
      const embedded = embeddedParts(embed, () => lists.permissions(p, l));
      if (items) embedded.listItems = (items.get(l.lid) ?? []).map((i) => presentItem(i));
      return Object.keys(embedded).length > 0 ? { ...presentList(l), embedded } : presentList(l);
    });
  });

  router.post('/lists', async (ctx) => {
    const href = single(query(ctx), 'href');
    if (href !== undefined && hasBody(ctx)) throw new AppError('HREF_AND_BODY', 'give the list either as the body or as ?href=, not both');
    const input = href !== undefined ? { href } : { contentType: ctx.get('content-type') || undefined, body: requestBody(ctx) };
    try {
      ctx.body = presentList(await lists.create(principal(ctx), input));
    } catch (err) {
      // a rejected import may leave most of a large body unsent: close the connection after the
      // answer instead of reading (possibly 100s of MB of) the rest
      if (!ctx.req.complete) ctx.set('Connection', 'close');
      throw err;
    }
  });

  router.get('/lists/:lid', async (ctx) => {
    const embed = embedParam(ctx, ['items', 'permissions']);
    const format = exportFormat((...types) => ctx.accepts(...types));
    const p = principal(ctx);
    const list = await lists.get(p, uuidParam(ctx, 'lid'));
    if (format.name === 'json') {
      const embedded = embeddedParts(embed, () => lists.permissions(p, list));
      if (embed.has('items')) {
        ctx.type = 'application/json';
        ctx.body = streamListJson(presentList(list), embedded, lists.allItems(list.lid));
      } else {
        ctx.body = Object.keys(embedded).length > 0 ? { ...presentList(list), embedded } : presentList(list);
      }
      return;
    }
    const stream = await writeList(format, {
      ...(list.name !== null ? { name: list.name } : {}),
      metadata: list.metadata,
      items: () => lists.allItems(list.lid),
    });
    ctx.attachment(`${list.lid}.${format.name === 'rlist' ? 'rli' : format.name}`, { type: 'inline' });
    ctx.type = `${format.mimeType}; charset=utf-8`;
    ctx.body = stream;
  });

  router.put('/lists/:lid', json, async (ctx) => {
    const change = validate(replaceListSchema, body(ctx));
    ctx.body = presentList(await lists.replace(principal(ctx), uuidParam(ctx, 'lid'), change));
  });

  router.patch('/lists/:lid', json, async (ctx) => {
    const { name, metadata } = validate(patchListSchema, body(ctx));
    ctx.body = presentList(await lists.patch(principal(ctx), uuidParam(ctx, 'lid'), { name, metadata }));
  });

  router.delete('/lists/:lid', async (ctx) => {
    await lists.remove(principal(ctx), uuidParam(ctx, 'lid'));
    ctx.status = 204;
  });

  router.get('/lists/:lid/items', async (ctx) => {
    const embed = embedParam(ctx, ['items', 'permissions']);
    const q = parseListQuery(query(ctx), ['embed']);
    const p = principal(ctx);
    const lid = uuidParam(ctx, 'lid');
    const rows = await lists.items(p, lid, q);
    const permissions = embed.has('permissions') ? lists.permissions(p, await lists.get(p, lid)) : undefined;
    ctx.body = rows.map((i) => {
      const out = presentItem(i, !embed.has('items'));
      return permissions ? { ...out, embedded: { permissions } } : out;
    });
  });

  router.post('/lists/:lid/items', optionalJson, async (ctx) => {
    const href = hrefParam(ctx);
    const given = body(ctx);
    if (href !== undefined && given !== undefined) throw new AppError('HREF_AND_BODY', 'give the item either as the body or as ?href=, not both');
    const item = href !== undefined ? { href, metadata: {} } : validate(itemSchema, required(given, 'give the item as a JSON body or as ?href='));
    ctx.body = presentItem(await lists.append(principal(ctx), uuidParam(ctx, 'lid'), { href: item.href, metadata: item.metadata }));
  });

  router.get('/lists/:lid/items/:id', async (ctx) => {
    ctx.body = presentItem(await lists.item(principal(ctx), uuidParam(ctx, 'lid'), uuidParam(ctx, 'id')));
  });

  router.put('/lists/:lid/items/:id', json, async (ctx) => {
    const { href, metadata } = validate(replaceItemSchema, body(ctx));
    ctx.body = presentItem(await lists.replaceItem(principal(ctx), uuidParam(ctx, 'lid'), uuidParam(ctx, 'id'), { href, metadata }));
  });

  router.patch('/lists/:lid/items/:id', optionalJson, async (ctx) => {
    const href = hrefParam(ctx);
    const given = body(ctx);
    if (href !== undefined && given !== undefined) throw new AppError('HREF_AND_BODY', '?href= changes only the href: send no body with it');
    const change = href !== undefined ? { href } : validate(patchItemSchema, required(given, 'give the change as a JSON body or as ?href='));
    ctx.body = presentItem(await lists.patchItem(principal(ctx), uuidParam(ctx, 'lid'), uuidParam(ctx, 'id'), { href: change.href, metadata: change.metadata }));
  });

  router.delete('/lists/:lid/items/:id', async (ctx) => {
    await lists.removeItem(principal(ctx), uuidParam(ctx, 'lid'), uuidParam(ctx, 'id'));
    ctx.status = 204;
  });

  return router;
}
