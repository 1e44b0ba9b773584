import { z } from 'zod';
import { parseAddressRange } from '../net/address-policy.js';
import { QUEUE_NAMES } from '../queue/jobs.js';

/** Rights a role may hold in an area. */
export const ACTIONS = ['read', 'write', 'delete', 'act', 'impersonate'] as const;
export type Action = (typeof ACTIONS)[number];

export const AREAS = [
  'documents', 'tasks', 'lists', 'panels', 'configuration', 'messages', 'sessions',
  'jobs', 'printers', 'flows', 'statistics',
] as const;
export type Area = (typeof AREAS)[number];

const grantSchema = z.strictObject({
  /** Which objects the role sees: its own, or everybody's. */
  scope: z.enum(['own', 'all']),
  actions: z.array(z.enum(ACTIONS)),
});

const roleSchema = z.strictObject({
  description: z.string().optional(),
  areas: z.partialRecord(z.enum(AREAS), grantSchema),
});

const serviceSchema = z.strictObject({
  type: z.string().min(1),
  title: z.string().optional(),
  description: z.string().optional(),
  enabled: z.boolean().default(true),
  /** Connector-specific options, validated by the connector type. */
  options: z.record(z.string(), z.unknown()).default({}),
});
export type ServiceConfig = z.infer<typeof serviceSchema>;

const concurrency = z.coerce.number().int().min(1).max(64);

/**
 * How far one kind of statement of one process is gathered (`MicroBatcher`):
 * `maxInFlight` statements of the kind run at once, the requests that come
 * in meanwhile wait and go together as the next, at most `maxBatch` to a
 * statement (1: every request on its own).
 */
const batchingSchema = (d: { maxInFlight: number; maxBatch: number }) => z.strictObject({
  maxInFlight: z.coerce.number().int().min(1).max(64).default(d.maxInFlight),
  maxBatch: z.coerce.number().int().min(1).max(1000).default(d.maxBatch),
}).prefault({});

/** A range for `print.confinement` (`10.0.0.0/8`, `fd00::/8`, or one address), optionally limited to some ports. */
const cidrSchema = z.string().refine((v) => {
  try {
    parseAddressRange(v);
    return true;
  } catch {
    return false;
  }
}, 'an IP address or a range such as 10.0.0.0/8 or fd00::/8');
const addressRuleSchema = z.union([cidrSchema, z.strictObject({
  cidr: cidrSchema,
  ports: z.array(z.coerce.number().int().min(1).max(65535)).min(1).optional(),
})]);

const sidSchema = z.string().regex(/^[a-zA-Z0-9][a-zA-Z0-9_-]{0,62}$/, 'service ids are 1-63 letters, digits, "_" or "-"');

/**
 * A default panel's id: a name, never UUID-shaped, so it cannot be taken for
 * a user panel's generated `pid` (`/v1/panels/{pid}` tells them apart by it).
 */
const defaultPanelPidSchema = z.string().regex(/^[a-zA-Z0-9][a-zA-Z0-9_-]{0,62}$/, 'default panel ids are 1-63 letters, digits, "_" or "-"');
const UUID_SHAPED = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A default panel (`/v1/ui`): a `name`, optionally the `roles` it is shown to
 * (absent: every caller with the panels read right), and any further keys of
 * the panel's configuration, passed to the UI as they are.
 */
const defaultPanelSchema = z.looseObject({
  name: z.string().min(1).max(1024),
  roles: z.array(z.string().min(1)).optional(),
});
export type DefaultPanelConfig = z.infer<typeof defaultPanelSchema>;

export const configSchema = z.strictObject({
  server: z.strictObject({
    port: z.coerce.number().int().min(0).max(65535).default(8080),
    host: z.string().min(1).default('127.0.0.1'),
    /** Largest JSON request body. */
    jsonLimit: z.string().regex(/^\d+(b|kb|mb)$/i).default('1mb'),
    /** Largest content upload (bytes); 0 = unlimited. */
    maxUploadBytes: z.coerce.number().int().min(0).default(0),
    shutdownTimeoutMs: z.coerce.number().int().min(100).default(30_000),
    /** Longest wait for the next chunk of a request body, then 408 and the connection closed. */
    bodyIdleTimeoutMs: z.coerce.number().int().min(100).default(30_000),
    /** Longest time for a whole request body, however it trickles in (slowloris); 0 = no limit. */
    bodyTimeoutMs: z.coerce.number().int().min(0).default(3_600_000),
    /** Longest time for a request's headers to arrive. */
    headersTimeoutMs: z.coerce.number().int().min(100).default(60_000),
    /** Bytes of serialized children listings kept per API process; 0 turns the cache off. */
    listingCacheBytes: z.coerce.number().int().min(0).default(64 * 1024 * 1024),
  }).prefault({}),
  role: z.enum(['all', 'api', 'worker']).default('all'),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** `auto`: readable lines (pino-pretty) when stdout is a terminal, JSON lines otherwise; `json` or `pretty` always. */
  logFormat: z.enum(['auto', 'json', 'pretty']).default('auto'),
  dataDir: z.string().min(1).default('./data'),
  database: z.strictObject({
    url: z.url({ protocol: /^postgres(ql)?$/ }).optional(),
    /** Schema to use (tests isolate themselves with their own). */
    schema: z.string().regex(/^[a-z_][a-z0-9_]{0,62}$/).default('public'),
    poolSize: z.coerce.number().int().min(1).max(200).default(10),
  }).prefault({}),
  redis: z.strictObject({
    url: z.url({ protocol: /^rediss?$/ }).default('redis://127.0.0.1:6379'),
    /** BullMQ key prefix; tests isolate themselves with their own. */
    prefix: z.string().regex(/^[a-zA-Z0-9_.-]+$/).default('wcr'),
  }).prefault({}),
  auth: z.strictObject({
    issuer: z.url().optional(),
    audience: z.string().optional(),
    rolesClaim: z.string().regex(/^[^.]+(\.[^.]+)*$/, 'a dotted claim path').default('roles'),
    clientId: z.string().optional(),
    scopes: z.array(z.string()).default(['openid', 'profile', 'email']),
    /** Public URL of the development issuer (default http://<host>:<port>/dev-issuer). */
    devIssuerUrl: z.url().optional(),
    clockToleranceSec: z.coerce.number().int().min(0).max(300).default(30),
    /** Role given to a token that carries no known role. */
    defaultRole: z.string().optional(),
    roles: z.record(z.string(), roleSchema),
  }),
  queues: z.strictObject({
    /** Jobs run at once per queue per worker process: one number for all, or per queue with a default. */
    concurrency: z.union([
      z.strictObject({ default: concurrency.default(4), ...Object.fromEntries(QUEUE_NAMES.map((q) => [q, concurrency.optional()])) }),
      concurrency,
    ]).default(4),
    /** How long a running job's lock lives without renewal; a dead worker's jobs run again after about twice this. */
    lockDurationMs: z.coerce.number().int().min(1000).max(600_000).default(30_000),
    /** Times the reconciler re-creates a failed or stalled job whose row is still pending before it fails the row. */
    maxRecreations: z.coerce.number().int().min(0).max(100).default(3),
    reconcileIntervalMs: z.coerce.number().int().min(1000).default(60_000),
    /**
     * How often a worker process looks for long-lived jobs (printers' dispatch) left active by a
     * worker proven dead (its PostgreSQL liveness lock free at every look for 5 s, or two periods) and queues them again.
     */
    takeoverIntervalMs: z.coerce.number().int().min(250).max(60_000).default(2000),
    /** Input items of a task run per `task.items` job (run one after another in it). */
    taskItemsPerJob: z.coerce.number().int().min(1).max(10_000).default(25),
    housekeepingIntervalMs: z.coerce.number().int().min(1000).default(300_000),
  }).prefault({}),
  commands: z.strictObject({
    /** Seconds an unread command status is kept. */
    expirySec: z.coerce.number().int().min(1).default(3600),
    importTimeoutMs: z.coerce.number().int().min(1000).default(600_000),
    /** Allow `import` from loopback/private addresses (off in production). */
    importAllowPrivate: z.boolean().default(false),
  }).prefault({}),
  lists: z.strictObject({
    /** Items one imported list (per-user list or task body, any format) may hold; more is 413 LIST_TOO_LARGE. */
    maxItems: z.coerce.number().int().min(1).max(100_000_000).default(10_000),
  }).prefault({}),
  messages: z.strictObject({
    /** Off: every /v1/messages route answers 404 NO_MESSAGES (the spec's "service provides no messages"); what the runtime posts still expires. */
    enabled: z.boolean().default(true),
    /** Seconds a message lives when it names no `expires` of its own (DESIGN.md: 7 days); housekeeping deletes it after. */
    lifetimeSec: z.coerce.number().int().min(1).max(10 * 365 * 86_400).default(7 * 86_400),
    /** Unexpired messages one user may have; a create beyond is 409 MESSAGE_LIMIT_REACHED (posts by the runtime are not refused). */
    maxPerUser: z.coerce.number().int().min(1).max(100_000_000).default(10_000),
  }).prefault({}),
  tasks: z.strictObject({
    /**
     * Tasks one user may have, as creator or owner (a task created for
     * another user counts for both); more is 409 TASK_LIMIT_REACHED. The
     * runtime's own work (intakes, a system principal) is not counted.
     */
    maxPerUser: z.coerce.number().int().min(1).max(100_000_000).default(10_000),
    /** Items one task's input list may hold, however they come (create in any format, appends, intakes); default `lists.maxItems`. */
    maxItems: z.coerce.number().int().min(1).max(100_000_000).optional(),
    /** Items of each list a task search embeds (`embed=inputlist`, `output`) per task; the rest through the list's own route. */
    searchEmbedItems: z.coerce.number().int().min(0).max(10_000).default(100),
  }).prefault({}),
  printDispatch: z.strictObject({
    /** First wait before a postponed job (printer unreachable) is tried again; it doubles per attempt. */
    retryBaseMs: z.coerce.number().int().min(100).max(3_600_000).default(5000),
    /** Longest wait between two tries of a postponed job. */
    retryMaxMs: z.coerce.number().int().min(100).max(86_400_000).default(300_000),
    /** How long opening a connection to a network printer (socket, IPP, LPR) may take. */
    connectTimeoutMs: z.coerce.number().int().min(100).max(600_000).default(10_000),
    /** How long a connection to a printer may make no progress before the delivery fails. */
    idleTimeoutMs: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
    /**
     * How long a delivery's outcome that cannot be written (the database is
     * away) is kept in memory and written again, with backoff, before the run
     * gives up (the job is then left in flight and ends "delivery uncertain").
     */
    outcomeRetryMs: z.coerce.number().int().min(0).max(86_400_000).default(600_000),
    /** Acknowledged deliveries' outcome-and-next-hand-off statements per worker process (OutcomeBatcher): up to `maxBatch` printers each. */
    outcomes: batchingSchema({ maxInFlight: 1, maxBatch: 64 }),
  }).prefault({}),
  previews: z.strictObject({
    previewSize: z.coerce.number().int().min(16).max(4096).default(1024),
    thumbSize: z.coerce.number().int().min(16).max(1024).default(128),
  }).prefault({}),
  print: z.strictObject({
    /** Seconds a job is kept after reaching each state, unless the job sets its own (DESIGN.md section 7). */
    retention: z.strictObject({
      processed: z.coerce.number().int().min(0).default(86_400),
      canceled: z.coerce.number().int().min(0).default(86_400),
      error: z.coerce.number().int().min(0).default(259_200),
      paused: z.coerce.number().int().min(0).default(259_200),
    }).prefault({}),
    /** Largest print document (bytes) taken by `POST /v3/jobs/`; 0 = `server.maxUploadBytes`. */
    maxDocumentBytes: z.coerce.number().int().min(0).default(0),
    /** Concurrent submissions' printer lookups and inserts per process (submit-print-job.ts): up to `maxBatch` jobs a statement. */
    submissions: batchingSchema({ maxInFlight: 1, maxBatch: 64 }),
    /**
     * Where printers may connect, on top of the built-in rule (print-backends/confinement.ts; it only tightens):
     * directory printers under `directoryRoots` (relative to dataDir; empty: none), network printers in `allow`
     * (when not empty) and not in `deny`.
     */
    confinement: z.strictObject({
      directoryRoots: z.array(z.string().min(1)).default(['.']),
      allow: z.array(addressRuleSchema).default([]),
      deny: z.array(addressRuleSchema).default([]),
    }).prefault({}),
  }).prefault({}),
  /** The event stream `GET /v1/events` (docs/design/events.md). */
  events: z.strictObject({
    /** Heartbeat (an SSE comment line) this often on every open stream. */
    heartbeatMs: z.coerce.number().int().min(100).max(300_000).default(15_000),
    /** The reconnection delay the stream suggests to clients (`retry:`). */
    retryMs: z.coerce.number().int().min(0).max(600_000).default(2000),
    /** How long events are kept for `Last-Event-ID` resumes (Redis stream and PostgreSQL); at least five minutes. */
    retentionSec: z.coerce.number().int().min(300).max(30 * 86_400).default(900),
    /** Unsent bytes a client may have before its stream is cut (it does not read). */
    clientBufferBytes: z.coerce.number().int().min(1024).max(1 << 30).default(1 << 20),
    /** Live events held for one client while its backlog is written; more and it is cut. */
    maxPending: z.coerce.number().int().min(10).max(10_000_000).default(10_000),
  }).prefault({}),
  services: z.record(sidSchema, serviceSchema),
  /** The workflow API's UI defaults (`/v1/ui`): read-only panels keyed by their `pid`. */
  ui: z.strictObject({
    panels: z.record(defaultPanelPidSchema, defaultPanelSchema).default({}),
  }).prefault({}).superRefine((ui, ctx) => {
    // the UI tells default panels apart by name, as user panels are per user
    const seen = new Map<string, string>();
    for (const [pid, panel] of Object.entries(ui.panels)) {
      if (UUID_SHAPED.test(pid)) ctx.addIssue({ code: 'custom', path: ['panels', pid], message: 'a default panel id must not look like a UUID (user panels have those)' });
      const other = seen.get(panel.name);
      if (other !== undefined) ctx.addIssue({ code: 'custom', path: ['panels', pid, 'name'], message: `the name "${panel.name}" is used by the default panel "${other}" already` });
      seen.set(panel.name, pid);
    }
  }),
  /** Operator pages outside the two APIs. */
  admin: z.strictObject({
    /** bull-board at /admin/queues, for the admin role only (docs/operations: src/api/admin/queue-dashboard.ts). */
    queueDashboard: z.strictObject({
      enabled: z.boolean().default(true),
      /** No retry, clean, promote or delete from the page (the API refuses every change too). */
      readOnly: z.boolean().default(true),
      /** Lifetime of the sign-in cookie, seconds (never beyond the token it was made from). */
      cookieMaxAgeSec: z.coerce.number().int().min(60).max(86_400).default(3600),
    }).prefault({}),
  }).prefault({}),
});

export type AppConfig = z.infer<typeof configSchema>;
