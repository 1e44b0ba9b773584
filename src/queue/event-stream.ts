import { Redis } from 'ioredis';
import type { Logger } from '../logging/logger.js';
import { connectedWithin, outageLogger, within } from './redis-connection.js';

/** One event in the Redis stream: its position (`seq`, the stream id `<seq>-0`) and its JSON. */
export interface StreamEntry {
  seq: number;
  data: string;
}

/**
 * The Redis side of the event stream (docs/design/events.md), here because
 * src/queue/ is the one module that imports ioredis. One Redis Stream per
 * key prefix; entry ids are `<seq>-0`, so an event's id in the stream, in
 * PostgreSQL (`events.seq`) and in `Last-Event-ID` is one number.
 *
 * Commands fail at once while Redis is away (no offline queue, nothing
 * resent after a reconnect): the publisher backs off and the readers catch
 * up from PostgreSQL, so nothing waits on a queue of stale commands.
 */
export interface EventStream {
  /** The last seq in the stream; 0 when it is empty or gone (Redis lost it). */
  top(): Promise<number>;
  /** Entries after `after`, oldest first, at most `count`. */
  range(after: number, count: number): Promise<StreamEntry[]>;
  /** Appends entries (ascending seqs above `top()`) in one MULTI: all or none. */
  append(entries: readonly StreamEntry[]): Promise<void>;
  /** Drops entries below `minSeq` (approximately: whole macro nodes, never one at or above it). */
  trim(minSeq: number): Promise<void>;
  /** Waits up to `blockMs` for entries after `after` (on a connection of its own: a blocking read holds it). */
  read(after: number, blockMs: number, count: number): Promise<StreamEntry[]>;
  /** Whether the command connection is up (the publisher opens no transaction while it is not). */
  connected(): boolean;
  /** Whether the reading connection is up. */
  readerConnected(): boolean;
  close(): Promise<void>;
}

type RawEntry = [id: string, fields: string[]];

const seqOf = (id: string): number => Number(id.slice(0, id.indexOf('-')));

function entries(raw: RawEntry[]): StreamEntry[] {
  const out: StreamEntry[] = [];
  for (const [id, fields] of raw) {
    const at = fields.indexOf('e');
    if (at >= 0 && at + 1 < fields.length) out.push({ seq: seqOf(id), data: fields[at + 1]! });
  }
  return out;
}

export function createEventStream(opts: { url: string; prefix: string; log: Logger }): EventStream {
  const key = `${opts.prefix}:events`;
  const options = { lazyConnect: false, enableOfflineQueue: false, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0 } as const;
  const everReady = new WeakSet<Redis>();
  // one message per outage for the stream's connections together
  const outage = outageLogger(opts.log, { connection: 'events' });
  const connect = (what: string) => {
    const conn = new Redis(opts.url, { ...options, connectionName: `wcr-${what}` });
    conn.on('error', (err: Error) => outage.error(err));
    conn.on('ready', () => {
      everReady.add(conn);
      outage.ready();
    });
    return conn;
  };
  const cmd = connect('events');
  // no offline queue: a command waits a moment for the first connection, and fails at once while Redis is away
  let onClose: (() => void) | undefined;
  const closing = new Promise<never>((_resolve, reject) => {
    onClose = () => reject(new Error('the event stream is closed'));
  });
  closing.catch(() => undefined);
  // ... and close() ends that wait at once
  const up = (conn: Redis) => (conn.status === 'ready' || everReady.has(conn) ? undefined : Promise.race([connectedWithin(conn, 5000), closing]));
  // only a process that reads (an API's hub) opens the blocking connection
  let reader: Redis | undefined;
  let closed = false;
  return {
    async top() {
      await up(cmd);
      const raw = (await cmd.xrevrange(key, '+', '-', 'COUNT', 1)) as RawEntry[];
      return raw.length > 0 ? seqOf(raw[0]![0]) : 0;
    },
    async range(after, count) {
      await up(cmd);
      return entries((await cmd.xrange(key, `(${after}-0`, '+', 'COUNT', count)) as RawEntry[]);
    },
    async append(list) {
      if (list.length === 0) return;
      await up(cmd);
      const multi = cmd.multi();
      for (const e of list) multi.xadd(key, `${e.seq}-0`, 'e', e.data);
      const results = await multi.exec();
      const failed = results?.find(([err]) => err);
      if (!results || failed) throw failed?.[0] ?? new Error('the event stream transaction was discarded');
    },
    async trim(minSeq) {
      await up(cmd);
      await cmd.xtrim(key, 'MINID', '~', `${minSeq}-0`);
    },
    async read(after, blockMs, count) {
      if (closed) throw new Error('the event stream is closed');
      reader ??= connect('events-reader');
      await up(reader);
      const raw = (await reader.xread('COUNT', count, 'BLOCK', blockMs, 'STREAMS', key, `${after}-0`)) as [string, RawEntry[]][] | null;
      return raw ? entries(raw[0]![1]) : [];
    },
    connected: () => cmd.status === 'ready',
    readerConnected: () => reader?.status === 'ready',
    async close() {
      if (closed) return;
      // a blocked XREAD would hold quit() until its timeout: disconnect the reader at once
      closed = true;
      onClose?.();
      reader?.disconnect();
      await within(cmd.quit(), 1000);
      cmd.disconnect();
    },
  };
}
