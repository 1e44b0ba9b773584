import type { DefaultPanel } from './default-panels.js';
import type { PanelRow } from './store/panel-store.js';

/** Panels to API bodies. The server's own fields come last, so a configuration key never shadows them. */

export const panelHref = (pid: string) => `/v1/panels/${pid}`;
export const defaultPanelHref = (pid: string) => `/v1/ui/${encodeURIComponent(pid)}`;

/** A user panel: its configuration, its name and the server's fields. */
export function presentPanel(r: PanelRow): Record<string, unknown> {
  return {
    ...r.config,
    pid: r.pid,
    name: r.name,
    readonly: false,
    creator: r.creator,
    owner: r.owner,
    created: r.created.toISOString(),
    modified: r.modified.toISOString(),
    links: { self: { href: panelHref(r.pid) } },
  };
}

/** A default panel (read-only); the roles it is shown to are the server's business. */
export function presentDefaultPanel(d: DefaultPanel): Record<string, unknown> {
  return { ...d.config, pid: d.pid, name: d.name, readonly: true, links: { self: { href: defaultPanelHref(d.pid) } } };
}
