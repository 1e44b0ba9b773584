import { existsSync } from 'node:fs';

/** How to start a worker thread's script: the compiled `.js` by URL, or an eval bootstrap that loads the `.ts` source. */
export type ThreadEntry = { script: URL; eval?: false } | { script: string; eval: true };

/**
 * Locates a thread script given as the URL of its compiled `.js`. Compiled
 * output (`dist/`) has the `.js`. When running from sources (vitest, tsx)
 * only the `.ts` exists: Node 20 cannot strip types, vitest's transform does
 * not reach worker threads, and on Node 20 even an inherited `--import tsx`
 * does not apply to a worker's entry module. A tiny eval bootstrap that loads
 * the file through tsx's `tsImport` works in all of those cases. tsx is a
 * devDependency, which is fine: production always has the `.js`.
 */
export function threadEntry(js: URL): ThreadEntry {
  if (existsSync(js)) return { script: js };
  const ts = new URL(js.href.replace(/\.js$/, '.ts')).href;
  const tsxApi = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(tsxApi)}).then((tsx) => tsx.tsImport(${JSON.stringify(ts)}, ${JSON.stringify(import.meta.url)}));`;
  return { script: bootstrap, eval: true };
}
