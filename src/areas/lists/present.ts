import { Readable } from 'node:stream';
import { listTypes } from '../../formats/index.js';
import type { ItemRow, ListRow } from './store/list-store.js';
import type { ListEmbed } from './schema.js';

/** Rows of the lists area to API bodies (`links`, `embedded`). */

export const listHref = (lid: string) => `/v1/lists/${lid}`;
export const itemHref = (lid: string, id: string) => `/v1/lists/${lid}/items/${id}`;

type Permissions = { read: boolean; write: boolean; delete: boolean };

/** A list without its items. */
export function presentList(l: ListRow): Record<string, unknown> {
  return {
    lid: l.lid,
    ...(l.name !== null ? { name: l.name } : {}),
    metadata: l.metadata,
    creator: l.creator,
    owner: l.owner,
    created: l.created.toISOString(),
    modified: l.modified.toISOString(),
    count: l.item_count,
    links: { self: { href: listHref(l.lid) }, items: { href: `${listHref(l.lid)}/items` } },
  };
}

/** An item; `reference` gives only what names it (id, index, href, link), as item listings do by default. */
export function presentItem(i: ItemRow, reference = false): Record<string, unknown> {
  const ref = { id: i.id, index: i.position, href: i.href };
  const links = { links: { self: { href: itemHref(i.lid, i.id) } } };
  if (reference) return { ...ref, ...links };
  return { ...ref, metadata: i.metadata, created: i.created.toISOString(), modified: i.modified.toISOString(), ...links };
}

/** The parts of `embedded` that need no items: permissions, and the formats (the `metadata` embed). */
export function embeddedParts(embed: ReadonlySet<ListEmbed>, permissions: () => Permissions): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (embed.has('permissions')) out.permissions = permissions();
  if (embed.has('metadata')) {
    const types = listTypes();
    out.metadata = { exportTypes: types, importTypes: types };
  }
  return out;
}

/**
 * A list as JSON with every item under `embedded.listItems`, written as the
 * items are read: the JSON export. Its shape is a superset of the JSON import
 * body, so posting it back gives the same list.
 */
export function streamListJson(list: Record<string, unknown>, embedded: Record<string, unknown>, items: AsyncIterable<ItemRow>): Readable {
  async function* parts(): AsyncGenerator<string> {
    const head = JSON.stringify({ ...list, embedded: { ...embedded, listItems: [] } });
    // the object ends in `"listItems":[]}}`: write it open, then the items, then close
    yield head.slice(0, -3);
    let first = true;
    let chunk = '';
    for await (const item of items) {
      chunk += (first ? '' : ',') + JSON.stringify(presentItem(item));
      first = false;
      if (chunk.length > 64 * 1024) {
        yield chunk;
        chunk = '';
      }
    }
    yield `${chunk}]}}`;
  }
  return Readable.from(parts(), { objectMode: false });
}
