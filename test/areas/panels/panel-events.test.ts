import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PanelService } from '../../../src/areas/panels/panel-service.js';
import { DefaultPanels } from '../../../src/areas/panels/default-panels.js';
import type { PanelCreateEvent, PanelEvents } from '../../../src/areas/panels/panel-events.js';
import { presentPanel } from '../../../src/areas/panels/present.js';
import type { Principal } from '../../../src/auth/principal.js';
import type { Tx } from '../../../src/storage/driver/database.js';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';

/**
 * The one call site of `panel.create` (panel-events.ts): a PanelService on
 * the real database with a recording `PanelEvents`, proving the event is
 * raised inside the creating transaction, for the panel's holder, with the
 * panel as POST answers it, and only when `createpanel` is 1 or "1".
 */

let rt: TestRuntime;
let panels: PanelService;
const raised: { event: PanelCreateEvent; committed: boolean; rowVisibleInTx: boolean }[] = [];

const principal = (user: string, roles: string[]): Principal =>
  ({ user, identities: [user], roles, session: `s-${user}`, expires: Math.floor(Date.now() / 1000) + 600, claims: {} });

beforeAll(async () => {
  rt = await startTestRuntime({ parts: { api: false, workers: false } });
  const events: PanelEvents = {
    async panelCreated(tx: Tx, event: PanelCreateEvent) {
      // raised inside the transaction: the row is there for it, committed only with it
      const { rows } = await tx.query('SELECT 1 FROM panels WHERE pid = $1', [event.panel.pid]);
      const entry = { event, committed: false, rowVisibleInTx: rows.length === 1 };
      raised.push(entry);
      tx.afterCommit(() => { entry.committed = true; });
    },
  };
  panels = new PanelService({ db: rt.services.db, policy: rt.services.policy, tasks: rt.services.tasks, defaults: new DefaultPanels({}), events });
});
afterAll(() => rt.close());

describe('panel.create', () => {
  it('is raised for createpanel 1 and "1", for the holder, with the panel as answered, committed with it', async () => {
    const ann = principal('ann', ['user']);
    const a = await panels.create(ann, () => ({ name: 'A', createpanel: 1 }), undefined);
    const b = await panels.create(ann, () => ({ name: 'B', createpanel: '1', kind: 'chart' }), undefined);
    expect(raised.map((r) => r.event)).toEqual([
      { type: 'panel.create', user: 'ann', panel: presentPanel(a) },
      { type: 'panel.create', user: 'ann', panel: presentPanel(b) },
    ]);
    expect(raised.every((r) => r.committed && r.rowVisibleInTx)).toBe(true);
  });

  it('goes to the owner of a panel created for another user', async () => {
    raised.length = 0;
    const root = principal('root', ['admin']);
    const p = await panels.create(root, () => ({ name: 'For carl', createpanel: 1 }), 'carl');
    expect(raised.map((r) => r.event)).toEqual([{ type: 'panel.create', user: 'carl', panel: presentPanel(p) }]);
    expect(raised[0]!.event.panel).toMatchObject({ owner: 'carl', creator: 'root' });
  });

  it('is not raised without createpanel, for other values, on replace, nor for a create that fails', async () => {
    raised.length = 0;
    const bob = principal('bob', ['user']);
    const p = await panels.create(bob, () => ({ name: 'Quiet' }), undefined);
    for (const createpanel of [0, '0', 2, 'yes', true, '01']) await panels.create(bob, () => ({ createpanel }), undefined);
    await panels.replace(bob, p.pid, () => ({ name: 'Quiet', createpanel: 1 }));
    await expect(panels.create(bob, () => ({ name: 'Quiet', createpanel: 1 }), undefined)).rejects.toMatchObject({ code: 'NAME_EXISTS' });
    expect(raised).toEqual([]);
  });
});
