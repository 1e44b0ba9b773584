import { randomUUID } from 'node:crypto';
import type { AppConfig } from '../../config/schema.js';
import type { Policy } from '../../auth/policy.js';
import type { Principal } from '../../auth/principal.js';
import { AppError } from '../../errors/app-error.js';
import type { Logger } from '../../logging/logger.js';
import type { ListQuery } from '../../query/tree.js';
import type { Database } from '../../storage/driver/database.js';
import type { MessagePort, PostedMessage } from '../../connectors/ports.js';
import * as store from './store/message-store.js';
import type { MessageChange, MessageRow, NewMessage } from './store/message-store.js';

export interface MessageServiceOptions {
  db: Database;
  policy: Policy;
  log: Logger;
  config: AppConfig['messages'];
}

/** A create as the route validated it: the store's new message, its uuid optional, the recipient as `user`. */
export type MessageInput = Omit<NewMessage, 'uuid' | 'recipient' | 'creator' | 'metadata'> & {
  uuid?: string;
  metadata: Record<string, unknown>;
  /** The recipient; absent: the caller. Another user needs `impersonate` on messages. */
  user?: string;
};

/** A patch as the route validated it: `uuid` and `date` may be sent back unchanged, never changed (409). */
export interface MessagePatch extends MessageChange {
  uuid?: string;
  date?: string;
}

/**
 * Per-user messages (spec: Messages; DESIGN.md section 6): rights, rules and
 * expiry; never sees HTTP. A message is its recipient's: another user's is
 * 404 as if it did not exist, unless a role gives the `all` scope on
 * `messages` (listings always show the caller's own). Expired messages are
 * never shown and housekeeping deletes them. Also the runtime's
 * `MessagePort`: what connectors post, idempotent by uuid. All SQL is in the
 * message store.
 */
export class MessageService implements MessagePort {
  private readonly lifetime: number;

  constructor(private readonly o: MessageServiceOptions) {
    this.lifetime = o.config.lifetimeSec;
  }

  private enabled(): void {
    if (!this.o.config.enabled) throw new AppError('NO_MESSAGES', 'this service provides no messages');
  }

  /** 404 unless the caller may do `action` on the message (its recipient, or `all` scope); 403 without the area right. */
  private async visible(p: Principal, uuid: string, action: 'read' | 'write' | 'delete', sql: Parameters<typeof store.getMessage>[0] = this.o.db, lock = false): Promise<MessageRow> {
    this.enabled();
    this.o.policy.require(p, 'messages', action);
    const row = await store.getMessage(sql, uuid, this.lifetime, { lock });
    if (!row || !this.o.policy.may(p, 'messages', action, { owner: row.recipient })) {
      throw new AppError('MESSAGE_NOT_FOUND', 'no such message', { uuid });
    }
    return row;
  }

  /** GET /messages: the caller's unexpired messages (404 NO_MESSAGES when none match on this page). */
  async list(p: Principal, q: ListQuery): Promise<MessageRow[]> {
    this.enabled();
    this.o.policy.require(p, 'messages', 'read');
    const rows = await store.listMessages(this.o.db, p.identities, q, this.lifetime);
    if (rows.length === 0) throw new AppError('NO_MESSAGES', 'no messages match');
    return rows;
  }

  get(p: Principal, uuid: string): Promise<MessageRow> {
    return this.visible(p, uuid, 'read');
  }

  /**
   * POST /messages: for the caller, or for `user` with `impersonate`. The
   * server adds `uuid` and `date` when absent; a uuid in use (even by an
   * expired message not yet deleted) is 409 MESSAGE_EXISTS.
   */
  async create(p: Principal, m: MessageInput): Promise<MessageRow> {
    this.enabled();
    this.o.policy.require(p, 'messages', 'write');
    const recipient = m.user === undefined ? p.user : this.o.policy.ownerFor(p, 'messages', m.user)!;
    checkExpiry(m.date, m.expires);
    const expiry = m.expires ? Date.parse(m.expires) : (m.date === undefined ? Date.now() : Date.parse(m.date)) + this.lifetime * 1000;
    if (expiry <= Date.now()) throw new AppError('VALIDATION_FAILED', 'the message would have expired already (its date is older than the lifetime, or expires is past)', { lifetimeSec: this.lifetime });
    return this.o.db.transaction(async (tx) => {
      if (await store.countMessages(tx, recipient, this.o.config.maxPerUser) >= this.o.config.maxPerUser) {
        throw new AppError('MESSAGE_LIMIT_REACHED', `${recipient} has ${this.o.config.maxPerUser} messages, the most one user may have`, { max: this.o.config.maxPerUser });
      }
      const row = await store.insertMessage(tx, { ...m, uuid: m.uuid ?? randomUUID(), recipient, creator: p.user }, this.lifetime);
      if (!row) throw new AppError('MESSAGE_EXISTS', 'a message with this uuid exists', { uuid: m.uuid });
      return row;
    });
  }

  /** PATCH /messages/{uuid}: only the given fields change; changing `uuid` or `date` is 409. */
  async patch(p: Principal, uuid: string, change: MessagePatch): Promise<MessageRow> {
    return this.o.db.transaction(async (tx) => {
      const current = await this.visible(p, uuid, 'write', tx, true);
      if (change.uuid !== undefined && change.uuid.toLowerCase() !== current.uuid) {
        throw new AppError('UUID_IMMUTABLE', "a message's uuid cannot be changed", { uuid: current.uuid });
      }
      if (change.date !== undefined && Date.parse(change.date) !== current.date.getTime()) {
        throw new AppError('DATE_IMMUTABLE', "a message's date cannot be changed", { date: current.date.toISOString() });
      }
      checkExpiry(current.date.toISOString(), change.expires);
      const { uuid: _u, date: _d, ...rest } = change;
      return (await store.patchMessage(tx, uuid, rest, this.lifetime))!;
    });
  }

  async remove(p: Principal, uuid: string): Promise<void> {
    await this.o.db.transaction(async (tx) => {
      await this.visible(p, uuid, 'delete', tx, true);
      await store.deleteMessage(tx, uuid);
    });
  }

  /** MessagePort: the runtime's own post (no rights asked); a uuid posted before changes nothing. */
  async post(user: string, m: PostedMessage): Promise<void> {
    await store.insertMessage(this.o.db, {
      uuid: m.uuid ?? randomUUID(), recipient: user, type: m.type, text: m.text.slice(0, 2000),
      source: m.source ?? null, href: m.href ?? null, metadata: m.metadata ?? {}, creator: 'system',
    }, this.lifetime);
  }

  /** Housekeeping: expired messages go. */
  async deleteExpired(): Promise<number> {
    return store.deleteExpired(this.o.db, this.lifetime);
  }
}

/** 400 when a message would expire before it was written. */
function checkExpiry(date: string | undefined, expires: string | null | undefined): void {
  if (expires === undefined || expires === null) return;
  const from = date === undefined ? Date.now() : Date.parse(date);
  if (Date.parse(expires) <= from) throw new AppError('VALIDATION_FAILED', 'expires must be later than the message\'s date', { expires });
}
