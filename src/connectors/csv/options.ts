import { CronExpressionParser } from 'cron-parser';
import { z } from 'zod';
import { DEFAULT_LEASE_TTL_MS } from '../connector.js';
import { stringsIn, unknownPlaceholders } from '../intake-files/placeholders.js';

/** The placeholders a task name and task metadata may use. */
export const PLACEHOLDERS = ['name', 'stem', 'ext', 'size', 'source', 'takenAt', 'sha256'] as const;

const placeholderMessage = `unknown placeholder (known: ${PLACEHOLDERS.map((p) => `{${p}}`).join(', ')})`;

const metadata = z.record(z.string(), z.unknown()).default({}).refine(
  (m) => stringsIn(m).every((s) => unknownPlaceholders(s, PLACEHOLDERS).length === 0),
  { message: placeholderMessage },
);

/** Patterns are picomatch globs on the file's name; names starting with "." match only a pattern that starts with ".". */
const patterns = z.array(z.string().min(1).max(256)).min(1).max(64);

export const sourceSchema = z.strictObject({
  /** A directory to import from; relative paths resolve against the data directory. Created (with done/ and error/) at start. */
  directory: z.string().min(1).optional(),
  /** Or an http(s) URL fetched on every run (through the `import` command's address guard). */
  url: z.url({ protocol: /^https?$/ }).optional(),
  /** Names taken from a directory (not used for a URL). */
  include: patterns.default(['*.csv', '*.rli', '*.rlist']),
  /** The list format; default by the name's extension (`.csv`; `.rli`, `.rlist`), for a URL also by its content type. */
  format: z.enum(['csv', 'rlist']).optional(),
  /** The task each file becomes: the service, its name (placeholders allowed) and metadata; `start` starts it at once. */
  task: z.strictObject({
    service: z.string().min(1),
    name: z.string().min(1).max(1024).default('{name}').refine((s) => unknownPlaceholders(s, PLACEHOLDERS).length === 0, { message: placeholderMessage }),
    metadata,
    start: z.boolean().default(false),
  }),
  /** The user the tasks belong to (owner); default none (the intake's own). */
  owner: z.string().min(1).max(256).optional(),
  /** Who is told (a workflow API message) when a file of this source fails to import; default `owner`; neither: nobody. */
  notify: z.string().min(1).max(256).optional(),
}).superRefine((s, ctx) => {
  if ((s.directory === undefined) === (s.url === undefined)) {
    ctx.addIssue({ code: 'custom', path: ['directory'], message: 'give exactly one of directory and url' });
  }
});

export const scheduleSchema = z.strictObject({
  /** A cron pattern (5 fields, or 6 with seconds first), in `tz` (default the process's time zone). */
  cron: z.string().min(1).max(256).optional(),
  tz: z.string().min(1).max(64).optional(),
  /** Or a fixed interval between the starts of two runs. */
  everyMs: z.int().min(1000).max(31 * 86_400_000).optional(),
}).superRefine((s, ctx) => {
  if ((s.cron === undefined) === (s.everyMs === undefined)) {
    ctx.addIssue({ code: 'custom', path: [], message: 'give exactly one of cron and everyMs' });
    return;
  }
  if (s.tz !== undefined && s.cron === undefined) ctx.addIssue({ code: 'custom', path: ['tz'], message: 'tz goes with cron only' });
  if (s.cron === undefined) return;
  try {
    CronExpressionParser.parse(s.cron, { tz: s.tz }).next(); // next() checks the time zone too
  } catch (err) {
    ctx.addIssue({ code: 'custom', path: ['cron'], message: `invalid cron expression "${s.cron}": ${(err as Error).message}` });
  }
});

export const optionsSchema = z.strictObject({
  sources: z.array(sourceSchema).min(1).max(64),
  schedule: scheduleSchema,
  /** A directory's file is imported once its size and mtime stayed the same this long (and, on Linux, nobody has it open for writing). */
  stableMs: z.int().min(0).max(3_600_000).default(2000),
  /** A URL's answer: longest wait for it, and most bytes read (more fails the run of that source). */
  fetch: z.strictObject({
    timeoutMs: z.int().min(1000).max(3_600_000).default(60_000),
    maxBytes: z.int().min(1).max(2 ** 40).default(64 * 1024 * 1024),
  }).default({ timeoutMs: 60_000, maxBytes: 64 * 1024 * 1024 }),
  /** What was imported is remembered this many days (a file dropped again later than that is imported again). */
  keepDays: z.number().min(0).max(3650).default(30),
  /** Lease length: the imports run in one worker process at a time; a dead holder is replaced within about this long. */
  leaseTtlMs: z.int().min(1000).max(300_000).default(DEFAULT_LEASE_TTL_MS),
}).superRefine((o, ctx) => {
  const seen = new Set<string>();
  o.sources.forEach((s, i) => {
    const key = s.directory !== undefined ? `directory ${s.directory}` : `url ${s.url}`;
    if (seen.has(key)) ctx.addIssue({ code: 'custom', path: ['sources', i], message: `${key} is imported twice` });
    seen.add(key);
  });
});

export type CsvImportOptions = z.infer<typeof optionsSchema>;
export type SourceOptions = z.infer<typeof sourceSchema>;
export type ScheduleOptions = z.infer<typeof scheduleSchema>;
