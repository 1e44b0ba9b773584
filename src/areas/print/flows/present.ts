import type { FlowRow } from './flow-store.js';

export const presentFlow = (f: FlowRow) => ({
  name: f.name, type: f.type, description: f.description ?? '', steps: f.steps,
  creator: f.creator, created: new Date(f.created).toISOString(), updated: new Date(f.updated).toISOString(),
});
