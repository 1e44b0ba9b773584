import pg from 'pg';
import { APPLICATION_NAME } from './application-name.js';

const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;
const MAX_DELAY_MS = 10_000;

/**
 * LISTEN on a connection of its own (a pooled one would be handed to other
 * queries and drop the subscription). A lost connection is replaced with
 * backoff; once back, the handler hears `null`: whatever was notified in
 * between is gone, so the listener should look for itself.
 */
export async function pgListen(url: string, channel: string, handler: (payload: string | null) => void): Promise<() => Promise<void>> {
  if (!CHANNEL.test(channel)) throw new Error(`invalid channel name "${channel}"`);
  let current: pg.Client | undefined;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let delay = 250;
  const deliver = (payload: string | null) => {
    try {
      handler(payload);
    } catch {
      // the handler owns its errors; a throw must not kill the connection's event loop
    }
  };

  const connect = async (): Promise<void> => {
    const client = new pg.Client({ connectionString: url, keepAlive: true, application_name: APPLICATION_NAME });
    client.on('notification', (msg) => {
      if (msg.channel === channel) deliver(msg.payload ?? '');
    });
    // both fire on a lost server; only the first counts (see lost)
    client.on('error', () => lost(client));
    client.on('end', () => lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${channel}`);
    } catch (err) {
      await client.end().catch(() => {});
      throw err;
    }
    if (closed) {
      await client.end().catch(() => {});
      return;
    }
    current = client;
  };

  const reconnect = () => {
    timer = setTimeout(() => {
      connect().then(() => {
        delay = 250;
        if (!closed) deliver(null);
      }, () => {
        delay = Math.min(delay * 2, MAX_DELAY_MS);
        if (!closed) reconnect();
      });
    }, delay);
    timer.unref();
  };

  const lost = (client: pg.Client) => {
    if (client !== current || closed) return;
    current = undefined;
    client.end().catch(() => {});
    reconnect();
  };

  await connect();
  return async () => {
    closed = true;
    clearTimeout(timer);
    const client = current;
    current = undefined;
    await client?.end().catch(() => {});
  };
}
