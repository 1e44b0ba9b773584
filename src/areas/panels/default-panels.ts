import type { DefaultPanelConfig } from '../../config/schema.js';
import type { Principal } from '../../auth/principal.js';

/** A default panel of the configuration (`ui.panels`), by id. */
export interface DefaultPanel {
  pid: string;
  name: string;
  /** Shown only to callers holding one of these roles; undefined: to everybody. */
  roles?: readonly string[];
  /** The further keys, handed to the UI as configured. */
  config: Record<string, unknown>;
}

/**
 * The read-only default panels (`/v1/ui`), from configuration, in its order.
 * Built once; ids are looked up in a `Map` (a pid such as `constructor` is
 * just unknown).
 */
export class DefaultPanels {
  private readonly byPid: ReadonlyMap<string, DefaultPanel>;

  constructor(panels: Record<string, DefaultPanelConfig>) {
    this.byPid = new Map(Object.entries(panels).map(([pid, { name, roles, ...config }]) => [pid, { pid, name, roles, config }]));
  }

  /** Is `pid` a default panel's id (whoever it is shown to)? */
  has(pid: string): boolean {
    return this.byPid.has(pid);
  }

  /** The default panels shown to the caller. */
  shownTo(p: Principal): DefaultPanel[] {
    return [...this.byPid.values()].filter((d) => shown(d, p));
  }

  /** A default panel shown to the caller, or undefined. */
  get(p: Principal, pid: string): DefaultPanel | undefined {
    const d = this.byPid.get(pid);
    return d && shown(d, p) ? d : undefined;
  }
}

function shown(d: DefaultPanel, p: Principal): boolean {
  return d.roles === undefined || p.system === true || d.roles.some((r) => p.roles.includes(r));
}
