import { batchesOf, fromBatches, type ItemBatches, type ParsedListItem } from '../../../../formats/index.js';
import { checkHref } from '../doc-href.js';
import type { StoreItem } from '../list-store.js';
import { copyEncodable, type CopyTarget } from './copy-encodable.js';

/**
 * Parsed items with their hrefs checked as they stream by (`checkHref`: a
 * repository document path or an http(s) URL, else 400 `INVALID_HREF` naming
 * the row, section or index), in the parser's batches, each carrying the
 * document its href names (so the store does not parse the href again).
 * Items that can be read as COPY payloads (`CopyEncodable`, a CSV body) keep
 * that, with the same check made where they are encoded. Every import into
 * a list goes through this: per-user lists and task input lists alike.
 */
export function checkedItems(items: AsyncIterable<ParsedListItem>): ItemBatches<StoreItem> {
  const encodable = copyEncodable(items);
  const checked = fromBatches((async function* () {
    for await (const batch of batchesOf(items)) {
      const out = new Array<StoreItem>(batch.length);
      for (let i = 0; i < batch.length; i++) {
        const item = batch[i]!;
        out[i] = { href: item.href, metadata: item.metadata, doc: checkHref(item.href, item.at) };
      }
      yield out;
    }
  })());
  return encodable ? { ...checked, copyChunks: (target: CopyTarget) => encodable.copyChunks(target, { checkHrefs: true }) } as ItemBatches<StoreItem> : checked;
}
