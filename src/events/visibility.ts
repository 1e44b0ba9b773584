import type { Area } from '../config/schema.js';
import { SHARED, type Policy } from '../auth/policy.js';
import type { Principal } from '../auth/principal.js';
import type { StreamEvent } from './event.js';

/**
 * Whether `p` may see the event: the recipient alone when it has one
 * (panel.create, message.created), else whoever may read the object in its
 * area (its creator or owner, or a role that sees all; shared objects such
 * as printers, everybody with the area's read right). The policy decides, as
 * it does for a GET of the object.
 */
export function maySee(policy: Policy, p: Principal, e: StreamEvent): boolean {
  if (e.recipient !== null) return p.identities.includes(e.recipient);
  const target = e.creator === null && e.owner === null ? SHARED : { creator: e.creator, owner: e.owner };
  return policy.may(p, e.area as Area, 'read', target);
}
