import { z } from 'zod';
import { DEFAULT_LEASE_TTL_MS } from '../connector.js';
import { stringsIn, unknownPlaceholders } from '../intake-files/placeholders.js';

/** The placeholders a task template and document metadata may use. */
export const PLACEHOLDERS = ['name', 'stem', 'ext', 'size', 'folder', 'takenAt', 'sha256'] as const;

const metadata = z.record(z.string(), z.unknown()).default({}).refine(
  (m) => stringsIn(m).every((s) => unknownPlaceholders(s, PLACEHOLDERS).length === 0),
  { message: `unknown placeholder (known: ${PLACEHOLDERS.map((p) => `{${p}}`).join(', ')})` },
);

const templateString = (fallback: string) => z.string().min(1).max(1024).default(fallback).refine(
  (s) => unknownPlaceholders(s, PLACEHOLDERS).length === 0,
  { message: `unknown placeholder (known: ${PLACEHOLDERS.map((p) => `{${p}}`).join(', ')})` },
);

/** Patterns are picomatch globs on the file's name; names starting with "." match only a pattern that starts with ".". */
const patterns = z.array(z.string().min(1).max(256)).max(64);

export const folderSchema = z.strictObject({
  /** The watched directory; relative paths resolve against the data directory. Created (with done/ and error/) when missing. */
  path: z.string().min(1),
  include: patterns.min(1).default(['*']),
  /** Names copying tools use while a file is on its way, by default. */
  exclude: patterns.default(['*.tmp', '*.part', '*.crdownload', '~*']),
  /** The repository service each file is stored into, and the collection path in it (made when missing; default the root). */
  store: z.strictObject({
    service: z.string().min(1),
    collection: z.string().min(1).max(1024).optional(),
    /** Metadata of the stored document, besides `source`; placeholders allowed. */
    metadata,
  }),
  /** A task per file in a task service, with the document as its one input item; `start` starts it at once. */
  task: z.strictObject({
    service: z.string().min(1),
    name: templateString('{name}'),
    metadata,
    /** Metadata of the input item (e.g. `printer`, `copies` for a print service). */
    itemMetadata: metadata,
    start: z.boolean().default(false),
  }).optional(),
  /** What happens to the source once taken: moved to done/ (default) or deleted. */
  after: z.enum(['move', 'delete']).default('move'),
  /** The user the documents and tasks belong to (owner); default none (the intake's own). */
  owner: z.string().min(1).max(256).optional(),
});

export const optionsSchema = z.strictObject({
  folders: z.array(folderSchema).min(1).max(64),
  /** A file is taken once its size and mtime stayed the same this long (and, on Linux, nobody has it open for writing). */
  stableMs: z.int().min(0).max(3_600_000).default(2000),
  /** A full listing of every folder this often, for events a watcher missed (network shares, overflowing inotify queues). */
  rescanMs: z.int().min(1000).max(86_400_000).default(30_000),
  /** Poll instead of native events (network shares), every `pollMs`. */
  usePolling: z.boolean().default(false),
  pollMs: z.int().min(100).max(600_000).default(1000),
  /** Files taken at once. */
  concurrency: z.int().min(1).max(64).default(4),
  /** Look for processes holding a file open for writing (Linux /proc) before taking it. */
  checkOpenWriters: z.boolean().default(true),
  /** Finished claims are kept this many days (what was taken when, from where). */
  keepDays: z.number().min(0).max(3650).default(30),
  /** Lease length: the hot folder runs in one worker process at a time; a dead holder is replaced within about this long. */
  leaseTtlMs: z.int().min(1000).max(300_000).default(DEFAULT_LEASE_TTL_MS),
}).superRefine((o, ctx) => {
  const seen = new Set<string>();
  o.folders.forEach((f, i) => {
    if (seen.has(f.path)) ctx.addIssue({ code: 'custom', path: ['folders', i, 'path'], message: `"${f.path}" is watched twice` });
    seen.add(f.path);
  });
});

export type HotFolderOptions = z.infer<typeof optionsSchema>;
export type FolderOptions = z.infer<typeof folderSchema>;
