import Router from '@koa/router';
import type { Context } from 'koa';
import type { Services } from '../../runtime/services.js';
import { AppError } from '../../errors/app-error.js';
import { parseListQuery, single } from '../../query/list-query.js';
import { jsonBody } from '../../api/middleware/json-body.js';
import { requestBody } from '../../api/middleware/body-timeout.js';
import { ifMatchHolds, ifNoneMatchHits, ifRangeHolds } from '../../api/conditional.js';
import { body, param, principal, query, uuidParam } from '../../api/context.js';
import { validate } from '../../api/validate.js';
import { embedParam } from '../../api/embed.js';
import { presentEntry } from './present.js';
import { ListingCache } from './listing-cache.js';
import { createEntrySchema, inactivesSchema, patchEntrySchema, replaceEntrySchema, EMBED_ENTRY, type EntryEmbed } from './schema.js';
import type { EntryRow } from './entry.js';

function parseRange(header: string, size: number): { start: number; end: number } | undefined {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  let start: number;
  let end: number;
  if (m[1] === '') {
    start = Math.max(0, size - Number(m[2]));
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start > end || start >= size) throw new AppError('RANGE_NOT_SATISFIABLE', `range ${header} is outside the content (${size} bytes)`, undefined, { 'Content-Range': `bytes */${size}` });
  return { start, end };
}

/** The repository rows of the Document Workflow API (spec: Repositories). */
export function repoRoutes(s: Services): Router {
  const router = new Router();
  const json = jsonBody(s.config.server.jsonLimit);
  const repo = s.repository;
  const listings = new ListingCache(s.config.server.listingCacheBytes);
  const present = (ctx: Context, e: EntryRow, embed: Set<EntryEmbed> = new Set()) =>
    presentEntry(e, { principal: principal(ctx), repo, blobs: s.blobs, embed });

  router.post('/repo/inactives', json, async (ctx) => {
    const parsed = validate(inactivesSchema, body(ctx));
    const ids = Array.isArray(parsed) ? parsed : parsed.documents;
    ctx.body = await repo.inactives(principal(ctx), ids.map((u) => u.toLowerCase()));
  });

  router.get('/services/:sid/repo', async (ctx) => {
    const sid = param(ctx, 'sid');
    const scope = single(query(ctx), 'scope') ?? 'all';
    if (scope !== 'root' && scope !== 'all') throw new AppError('INVALID_QUERY', 'scope must be "root" or "all"', { parameter: 'scope' });
    const embed = embedParam<EntryEmbed>(ctx, ['permissions', 'thumb']);
    const q = parseListQuery(query(ctx), ['scope', 'embed']);
    const { root, entries } = await repo.list(principal(ctx), sid, scope, q);
    const out = await present(ctx, root, embed);
    out.embedded = { ...(out.embedded as object | undefined), entries: await Promise.all(entries.map((e) => present(ctx, e, embed))) };
    ctx.body = out;
  });

  router.post('/services/:sid/repo', json, async (ctx) => {
    const p = principal(ctx);
    const input = validate(createEntrySchema, body(ctx));
    const owner = s.policy.ownerFor(p, 'documents', ctx.get('x-owner') || undefined);
    ctx.body = await present(ctx, await repo.create(p, param(ctx, 'sid'), undefined, input, owner));
  });

  router.get('/services/:sid/repo/:uuid', async (ctx) => {
    const embed = embedParam(ctx, EMBED_ENTRY);
    ctx.body = await present(ctx, await repo.get(principal(ctx), param(ctx, 'sid'), uuidParam(ctx, 'uuid')), embed);
  });

  // PUT replaces the record (metadata wholesale), PATCH merges into it; both may rename.
  for (const [method, schema, mode] of [['put', replaceEntrySchema, 'replace'], ['patch', patchEntrySchema, 'merge']] as const) {
    router[method]('/services/:sid/repo/:uuid', json, async (ctx) => {
      const p = principal(ctx);
      const input = validate(schema, body(ctx));
      const uuid = uuidParam(ctx, 'uuid');
      if (input.uuid !== undefined && String(input.uuid).toLowerCase() !== uuid) throw new AppError('UUID_IMMUTABLE', 'the uuid of an entry cannot be changed');
      const owner = input.owner === undefined ? undefined : input.owner === null ? null : s.policy.ownerFor(p, 'documents', input.owner);
      const change = { name: input.name, metadata: input.metadata, owner, type: input.type };
      ctx.body = await present(ctx, await repo.update(p, param(ctx, 'sid'), uuid, change, mode));
    });
  }

  router.post('/services/:sid/repo/:uuid', json, async (ctx) => {
    const p = principal(ctx);
    const sid = param(ctx, 'sid');
    const parent = uuidParam(ctx, 'uuid');
    const input = validate(createEntrySchema, body(ctx));
    const owner = s.policy.ownerFor(p, 'documents', ctx.get('x-owner') || undefined);
    ctx.body = await present(ctx, await repo.create(p, sid, parent, input, owner));
  });

  router.delete('/services/:sid/repo/:uuid', async (ctx) => {
    const force = single(query(ctx), 'force');
    if (force !== undefined && !['true', 'false', '1', '0', ''].includes(force)) throw new AppError('INVALID_QUERY', 'force must be true or false', { parameter: 'force' });
    await repo.remove(principal(ctx), param(ctx, 'sid'), uuidParam(ctx, 'uuid'), force === 'true' || force === '1' || force === '');
    ctx.status = 204;
  });

  router.get('/services/:sid/repo/:uuid/children', async (ctx) => {
    const embed = embedParam(ctx, EMBED_ENTRY);
    const q = parseListQuery(query(ctx), ['embed']);
    const uuid = uuidParam(ctx, 'uuid');
    const p = principal(ctx);
    const sid = param(ctx, 'sid');
    // Listings without embeds depend only on the rows, the owner filter and the query: cacheable.
    const gen = embed.size === 0 && listings.enabled ? await repo.generation(sid) : undefined;
    const key = `${sid}\n${uuid}\n${repo.listingScope(p)?.join('\n') ?? '*'}\n${ctx.querystring}`;
    if (gen !== undefined) {
      const hit = listings.get(key, gen);
      if (hit) {
        repo.authorize(p, hit.parent, 'read');
        ctx.type = 'application/json';
        ctx.body = hit.json;
        return;
      }
    }
    const { parent, rows } = await repo.children(p, sid, uuid, q);
    if (rows.length === 0) throw new AppError('NO_CHILDREN', `collection ${uuid} has no children${q.offset > 0 ? ' at this offset' : ''}`);
    if (gen !== undefined) {
      const json = JSON.stringify(rows.map((e) => present(ctx, e, embed)));
      listings.set(key, { gen, parent, json });
      ctx.type = 'application/json';
      ctx.body = json;
      return;
    }
    // presentEntry is synchronous unless thumbnails are embedded
    ctx.body = embed.has('thumb') ? await Promise.all(rows.map((e) => present(ctx, e, embed))) : rows.map((e) => present(ctx, e, embed));
  });

  router.get('/services/:sid/repo/:uuid/content', async (ctx) => {
    const p = principal(ctx);
    const sid = param(ctx, 'sid');
    const uuid = uuidParam(ctx, 'uuid');
    const entry = await repo.get(p, sid, uuid);
    const etag = entry.content_version ? `"${entry.content_version}"` : undefined;
    if (ifNoneMatchHits(ctx.get('if-none-match'), etag)) {
      ctx.status = 304;
      ctx.set('ETag', etag!);
      return;
    }
    const size = entry.size ?? 0;
    const rangeHeader = ctx.get('range');
    // a stale If-Range means the client's part is of other content: send it all (200)
    const ranged = rangeHeader !== '' && entry.type === 'document' && etag !== undefined && ifRangeHolds(ctx.get('if-range'), etag);
    const range = ranged ? parseRange(rangeHeader, size) : undefined;
    const { entry: e, stream } = await repo.openContent(p, sid, uuid, range);
    ctx.set('ETag', `"${e.content_version}"`);
    ctx.set('Accept-Ranges', 'bytes');
    ctx.set('Content-Disposition', `attachment; filename*=UTF-8''${encodeURIComponent(e.name)}`);
    ctx.type = e.mime_type ?? 'application/octet-stream';
    if (range) {
      ctx.status = 206;
      ctx.set('Content-Range', `bytes ${range.start}-${range.end}/${size}`);
      ctx.length = range.end - range.start + 1;
    } else {
      ctx.length = e.size ?? 0;
    }
    ctx.body = stream;
  });

  router.put('/services/:sid/repo/:uuid/content', async (ctx) => {
    const max = s.config.server.maxUploadBytes;
    if (max > 0 && (ctx.request.length ?? 0) > max) throw new AppError('PAYLOAD_TOO_LARGE', `content is larger than the limit of ${max} bytes`);
    const mime = (ctx.get('content-type').split(';')[0] ?? '').trim().toLowerCase() || 'application/octet-stream';
    if (!/^[\w.+-]+\/[\w.+-]+$/.test(mime)) throw new AppError('INVALID_CONTENT_TYPE', `"${mime}" is not a media type`);
    const p = principal(ctx);
    const sid = param(ctx, 'sid');
    const uuid = uuidParam(ctx, 'uuid');
    const ifMatch = ctx.get('if-match');
    if (ifMatch !== '') {
      // checked before a byte is read; a write racing this one can still land in between
      const current = await repo.get(p, sid, uuid);
      const etag = current.content_version ? `"${current.content_version}"` : undefined;
      // a collection is refused by writeContent (406) whatever the precondition
      if (current.type === 'document' && !ifMatchHolds(ifMatch, etag)) {
        throw new AppError('PRECONDITION_FAILED', etag ? `If-Match ${ifMatch} does not name the current content ${etag}` : `If-Match ${ifMatch}: the document has no content`,
          undefined, etag ? { ETag: etag } : undefined);
      }
    }
    const entry = await repo.writeContent(p, sid, uuid, requestBody(ctx), mime);
    ctx.set('ETag', `"${entry.content_version}"`);
    ctx.status = 204;
  });

  router.delete('/services/:sid/repo/:uuid/content', async (ctx) => {
    await repo.deleteContent(principal(ctx), param(ctx, 'sid'), uuidParam(ctx, 'uuid'));
    ctx.status = 204;
  });

  router.get('/services/:sid/repo/:uuid/preview', async (ctx) => {
    const entry = await repo.get(principal(ctx), param(ctx, 'sid'), uuidParam(ctx, 'uuid'));
    if (entry.type !== 'document') throw new AppError('NOT_A_DOCUMENT', 'collections have no preview');
    if (!entry.content_version) throw new AppError('NO_CONTENT', 'the document has no content');
    if (!entry.preview_sha256 || entry.preview_of !== entry.content_version) {
      throw new AppError(entry.preview_error && entry.preview_of === entry.content_version ? 'PREVIEW_UNAVAILABLE' : 'PREVIEW_NOT_READY',
        entry.preview_error && entry.preview_of === entry.content_version ? `no preview: ${entry.preview_error}` : 'the preview has not been made yet; try again shortly');
    }
    const stream = await s.blobs.open(entry.preview_sha256);
    if (!stream) throw new AppError('PREVIEW_NOT_READY', 'the preview has not been made yet');
    ctx.type = 'image/png';
    ctx.set('ETag', `"${entry.preview_sha256}"`);
    ctx.body = stream;
  });

  return router;
}
