import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/load.js';
import { DefaultPanels } from '../../../src/areas/panels/default-panels.js';
import type { Principal } from '../../../src/auth/principal.js';

/** `ui.panels` (the read-only defaults of `/v1/ui`): checked at start with messages naming the key. */

const load = (panels: unknown) => loadConfig({ env: {}, configDir: path.resolve('config'), overrides: { ui: { panels } } });
const who = (roles: string[]): Principal => ({ user: 'u', identities: ['u'], roles, session: 's', expires: 0, claims: {} });

describe('ui.panels', () => {
  it('ships defaults in config/default.yaml, in order, with their further keys', () => {
    const c = loadConfig({ env: {}, configDir: path.resolve('config') });
    expect(Object.keys(c.ui.panels)).toEqual(['tasks', 'documents', 'printers']);
    expect(c.ui.panels.tasks).toMatchObject({ name: 'Tasks', type: 'tasks', service: 'demo' });
  });

  it('refuses a UUID-shaped id, a bad id, a missing or duplicate name', () => {
    expect(() => load({ '0b1c2d3e-0000-4000-8000-000000000001': { name: 'U' } })).toThrow(ConfigError);
    expect(() => load({ '0b1c2d3e-0000-4000-8000-000000000001': { name: 'U' } })).toThrow(/ui\.panels.*UUID/s);
    expect(() => load({ 'a b': { name: 'X' } })).toThrow(/ui\.panels/);
    expect(() => load({ x: { title: 'no name' } })).toThrow(/ui\.panels\.x\.name/);
    expect(() => load({ x: { name: 'Tasks' } })).toThrow(/ui\.panels\.x\.name.*used by the default panel "tasks"/s);
  });

  it('shows a panel with roles only to holders of one of them', () => {
    const d = new DefaultPanels({ all: { name: 'All' }, ops: { name: 'Ops', roles: ['operator', 'admin'] } });
    expect(d.shownTo(who(['user'])).map((p) => p.pid)).toEqual(['all']);
    expect(d.shownTo(who(['admin'])).map((p) => p.pid)).toEqual(['all', 'ops']);
    expect(d.get(who(['user']), 'ops')).toBeUndefined();
    expect(d.get(who(['user']), 'constructor')).toBeUndefined();
    expect(d.has('ops')).toBe(true);
  });
});
