import type { Tx } from '../../storage/driver/database.js';

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

/** Raises nothing (no event stream wired). */
export const NO_PANEL_EVENTS: PanelEvents = { panelCreated: async () => {} };
