import pg from 'pg';
import { HELD_LOCK_RETAKE_MAX_MS, type HeldLock, type HeldLockEvents } from './database.js';
import { APPLICATION_NAME } from './application-name.js';

/**
 * Takes `pg_try_advisory_lock(lockClass, hashtext(key))` on a connection of
 * its own and keeps it for as long as the process lives: the kernel closes
 * the connection of a killed process, so the lock frees at once, while a
 * process that is merely slow or stopped keeps it (its socket stays open and
 * answers TCP keepalives). `idle_session_timeout` is off on this session, or
 * the server would end an idle holder. Resolves to undefined when another
 * session holds the key. A lost connection is replaced with backoff and the
 * lock taken again (`events`).
 */
export async function pgHoldLock(url: string, lockClass: number, key: string, events: HeldLockEvents = {}): Promise<HeldLock | undefined> {
  let current: pg.Client | undefined;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let delay = 250;

  /** A connected client holding the lock, or undefined when another session holds it. */
  const take = async (): Promise<pg.Client | undefined> => {
    const client = new pg.Client({ connectionString: url, keepAlive: true, application_name: APPLICATION_NAME });
    client.on('error', (err) => lost(client, err));
    client.on('end', () => lost(client, new Error('connection ended')));
    try {
      await client.connect();
      await client.query('SET idle_session_timeout = 0');
      const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS ok', [lockClass, key]);
      if (rows[0]?.ok) return client;
    } catch (err) {
      await client.end().catch(() => {});
      throw err;
    }
    await client.end().catch(() => {});
    return undefined;
  };

  const retake = () => {
    timer = setTimeout(() => {
      take().then((client) => {
        if (closed) return void client?.end().catch(() => {});
        if (!client) {
          events.onRefused?.();
          return fail();
        }
        delay = 250;
        current = client;
        events.onHeld?.();
      }, fail);
    }, delay);
    timer.unref();
  };
  const fail = () => {
    delay = Math.min(delay * 2, HELD_LOCK_RETAKE_MAX_MS);
    if (!closed) retake();
  };

  // both 'error' and 'end' fire on a lost server; only the first counts
  const lost = (client: pg.Client, err: unknown) => {
    if (client !== current || closed) return;
    current = undefined;
    client.end().catch(() => {});
    events.onLost?.(err);
    retake();
  };

  current = await take();
  if (!current) return undefined;
  return {
    held: () => current !== undefined,
    async release() {
      closed = true;
      clearTimeout(timer);
      const client = current;
      current = undefined;
      await client?.end().catch(() => {}); // ending the session releases its locks
    },
  };
}
