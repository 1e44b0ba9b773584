import type { MessageRow } from './store/message-store.js';

/** Rows of the messages area to API bodies. */

export const messageHref = (uuid: string) => `/v1/messages/${uuid}`;

/** A message as the API shows it (`user`: whom it is for). */
export function presentMessage(m: MessageRow): Record<string, unknown> {
  return {
    uuid: m.uuid,
    date: m.date.toISOString(),
    type: m.type,
    text: m.text,
    ...(m.source !== null ? { source: m.source } : {}),
    ...(m.href !== null ? { href: m.href } : {}),
    expires: m.expires.toISOString(),
    user: m.recipient,
    metadata: m.metadata,
    creator: m.creator,
    modified: m.modified.toISOString(),
    links: { self: { href: messageHref(m.uuid) } },
  };
}
