import { readFile } from 'node:fs/promises';
import type { Principal } from '../../auth/principal.js';
import type { BlobStore } from '../../blobs/blob-store.js';
import { entryHref } from '../../connectors/facets/repository.js';
import type { EntryRow } from './entry.js';
import type { RepositoryService } from './repository-service.js';
import type { EntryEmbed } from './schema.js';

export { entryHref };

/** Material icon names by kind, for `embedded.content-type.icon`. */
function iconOf(e: EntryRow): { font: string; value: string } {
  const mime = e.mime_type ?? '';
  const value = e.type === 'collection' ? 'folder'
    : mime === 'application/pdf' ? 'picture_as_pdf'
      : mime.startsWith('image/') ? 'image'
        : mime.startsWith('text/') ? 'article'
          : 'description';
  return { font: 'material-icons', value };
}

/** The RepoEntry JSON of DESIGN.md section 6, with the requested embedded parts. */
export function presentEntry(
  e: EntryRow,
  ctx: { principal: Principal; repo: RepositoryService; blobs: BlobStore; embed: Set<EntryEmbed> },
): Promise<Record<string, unknown>> | Record<string, unknown> {
  // Only thumbnails need I/O; everything else is built synchronously (listings are hot).
  return ctx.embed.has('thumb') ? presentWithThumb(e, ctx) : build(e, ctx, undefined);
}

async function presentWithThumb(
  e: EntryRow,
  ctx: { principal: Principal; repo: RepositoryService; blobs: BlobStore; embed: Set<EntryEmbed> },
): Promise<Record<string, unknown>> {
  // thumbnails are small PNGs (thumbSize px), so reading one whole is fine
  const thumb = e.thumb_sha256 ? await readFile(ctx.blobs.pathOf(e.thumb_sha256)).then((b) => b.toString('base64'), () => undefined) : undefined;
  return build(e, ctx, thumb);
}

function build(
  e: EntryRow,
  ctx: { principal: Principal; repo: RepositoryService; blobs: BlobStore; embed: Set<EntryEmbed> },
  thumb: string | undefined,
): Record<string, unknown> {
  const href = entryHref(e);
  const links: Record<string, { href: string }> = { self: { href } };
  if (e.parent) links.parent = { href: entryHref({ sid: e.sid, uuid: e.parent }) };
  if (e.type === 'collection') links.children = { href: `${href}/children` };
  if (e.type === 'document') {
    links.content = { href: `${href}/content` };
    links.preview = { href: `${href}/preview` };
  }
  const out: Record<string, unknown> = {
    uuid: e.uuid,
    name: e.name,
    type: e.type,
    metadata: e.metadata,
    creator: e.creator,
    owner: e.owner,
    created: e.created.toISOString(),
    modified: e.modified.toISOString(),
  };
  if (e.type === 'document') {
    out.size = e.size;
    out.mimeType = e.mime_type;
    out.sha256 = e.sha256;
  }
  out.links = links;
  if (ctx.embed.size > 0) {
    const embedded: Record<string, unknown> = {};
    if (ctx.embed.has('permissions')) {
      embedded.permissions = {
        read: ctx.repo.canSee(ctx.principal, e, 'read'),
        write: ctx.repo.canSee(ctx.principal, e, 'write'),
        delete: ctx.repo.canSee(ctx.principal, e, 'delete'),
      };
    }
    const contentType: Record<string, unknown> = {};
    if (ctx.embed.has('icon')) contentType.icon = iconOf(e);
    if (thumb !== undefined) contentType.thumb = thumb;
    if (Object.keys(contentType).length > 0) embedded['content-type'] = contentType;
    out.embedded = embedded;
  }
  return out;
}
