import type { Tx } from '../../storage/driver/database.js';
import { raiseEvent } from '../../events/event-store.js';

/** A `panel.create` event: the UI of `user` should show `panel` (DESIGN.md section 6, Panels). */
export interface PanelCreateEvent {
  type: 'panel.create';
  /** Whom it is for: the panel's holder (its owner, else its creator). */
  user: string;
  /** The panel as `POST /v1/panels` answers it. */
  panel: Record<string, unknown>;
}

/**
 * Where the panels service raises its events: the one call site of
 * `panel.create`, made inside the transaction that creates the panel, so an
 * implementation can commit the event with it (and never raise one for a
 * create that rolled back). The event stream (`/v1/events`) implements it;
 * until it is wired, `NO_PANEL_EVENTS` drops them.
 */
export interface PanelEvents {
  panelCreated(tx: Tx, event: PanelCreateEvent): Promise<void>;
}

/** Raises nothing (tests that look at the call alone). */
export const NO_PANEL_EVENTS: PanelEvents = { panelCreated: async () => {} };

/**
 * Raises `panel.create` into the event stream (`GET /v1/events`): a row of
 * `events` written by `raise_event` (migration 024) in the creating
 * transaction, for the holder only, so it commits or rolls back with the
 * panel.
 */
export const STREAM_PANEL_EVENTS: PanelEvents = {
  panelCreated: (tx, e) => raiseEvent(tx, { type: 'panel.create', area: 'panels', object: String(e.panel.pid), payload: e.panel, recipient: e.user }),
};
