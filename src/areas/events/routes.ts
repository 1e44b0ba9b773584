import Router from '@koa/router';
import type { Context } from 'koa';
import { EventBuffer, Session } from 'better-sse';
import type { Services } from '../../runtime/services.js';
import { AppError } from '../../errors/app-error.js';
import { keepOpen, principal, singleQuery } from '../../api/context.js';
import { EVENT_TYPES, EVENTS_LOST, type StreamEvent } from '../../events/event.js';
import type { EventSink } from '../../events/event-hub.js';

const LAST_ID = /^(0|[1-9][0-9]{0,15})$/;

/** `Last-Event-ID` (header; `lastEventId` in the query for browsers that cannot set it): a seq, or undefined. */
function lastEventId(ctx: Context, q: Record<string, string>): number | undefined {
  const raw = ctx.get('last-event-id') || q.lastEventId;
  if (raw === undefined || raw === '') return undefined;
  if (!LAST_ID.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new AppError('INVALID_LAST_EVENT_ID', 'Last-Event-ID must be an event id this stream sent (a non-negative integer)');
  }
  return Number(raw);
}

/** `types=a,b`: only these event types; every one must be known. */
function typesParam(q: Record<string, string>): ReadonlySet<string> | undefined {
  if (q.types === undefined) return undefined;
  const types = q.types.split(',').map((t) => t.trim()).filter(Boolean);
  for (const t of types) {
    if (!(EVENT_TYPES as readonly string[]).includes(t)) {
      throw new AppError('INVALID_QUERY', `unknown event type "${t.slice(0, 40)}" (known: ${EVENT_TYPES.join(', ')})`, { parameter: 'types' });
    }
  }
  return new Set(types);
}

/**
 * Each event framed once (better-sse's EventBuffer) and the same text written
 * to every client that receives it: with a thousand clients, framing per
 * client was most of the hub's work. Kept as long as the event object lives.
 */
const framed = new WeakMap<StreamEvent, EventBuffer>();
function frameOf(e: StreamEvent): EventBuffer {
  let buffer = framed.get(e);
  if (!buffer) {
    // payloads are JSON already
    buffer = new EventBuffer({ serializer: (data) => data as string }).push(e.payload, e.type, String(e.seq));
    framed.set(e, buffer);
  }
  return buffer;
}

/**
 * `GET /v1/events`: the caller's server-sent-events stream
 * (docs/design/events.md). better-sse frames the events and sends the
 * heartbeats; the response is Node's own (`ctx.respond = false`), written as
 * events come, never buffered by Koa. A client whose unsent bytes pass
 * `events.clientBufferBytes` (it does not read) is cut; the others never wait for it.
 */
export function eventRoutes(s: Services): Router {
  const router = new Router();
  const cfg = s.config.events;
  router.get('/events', async (ctx) => {
    const p = principal(ctx);
    const q = singleQuery(ctx);
    for (const k of Object.keys(q)) {
      if (k !== 'lastEventId' && k !== 'types') throw new AppError('INVALID_QUERY', `unknown query parameter ${k.slice(0, 40)} (allowed: lastEventId, types)`, { parameter: k.slice(0, 40) });
    }
    const after = lastEventId(ctx, q);
    const types = typesParam(q);
    // Koa's default status is 404 until a body is set; the stream's head is written by better-sse
    ctx.status = 200;
    ctx.respond = false;
    const { req, res } = ctx;
    const session = new Session(req, res, {
      statusCode: 200, keepAlive: cfg.heartbeatMs, retry: cfg.retryMs, trustClientEventId: false,
      // payloads are JSON already, written once for every client
      serializer: (data) => data as string,
      headers: { 'x-accel-buffering': 'no' },
    });
    let closed = false;
    let unsubscribe: (() => void) | undefined;
    // the caller's session counts in GET /sessions while the stream is open
    let releaseSession: (() => void) | undefined;
    const forgetAll = () => {
      closed = true;
      unsubscribe?.();
      releaseSession?.();
    };
    const end = () => {
      if (closed) return;
      forgetAll();
      res.end();
    };
    const cut = (reason: string) => {
      if (closed) return;
      forgetAll();
      s.log.info({ user: p.user, reason }, 'event stream cut');
      res.destroy();
    };
    keepOpen(ctx, end);
    req.once('close', forgetAll);
    const sink: EventSink = {
      principal: p, types,
      send(e: StreamEvent) {
        if (closed || !session.isConnected) return false;
        if (res.writableLength > cfg.clientBufferBytes) {
          cut('the client does not read its events (buffer full)');
          return false;
        }
        // an EventBuffer is written synchronously (batch awaits nothing for one)
        void session.batch(frameOf(e));
        return true;
      },
      lost(head, reason) {
        if (!closed && session.isConnected) session.push(JSON.stringify({ reason, resumesAfter: head }), EVENTS_LOST, String(head));
      },
      cut,
    };
    await new Promise<void>((resolve) => {
      if (session.isConnected) resolve();
      else session.once('connected', () => resolve());
      req.once('close', () => resolve());
    });
    if (closed) return;
    const forget = await s.events.subscribe(sink, after);
    if (closed) forget();
    else {
      unsubscribe = forget;
      releaseSession = s.sessions.streamOpened(p, cfg.heartbeatMs);
    }
  });
  return router;
}
