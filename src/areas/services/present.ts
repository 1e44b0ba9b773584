import type { Connector } from '../../connectors/connector.js';
import type { ServiceConfig } from '../../config/schema.js';

/** A service as `GET /v1/services` shows it: what it is and what its connector can do. */
export function presentService(sid: string, connector: Connector, config: ServiceConfig) {
  const caps = connector.capabilities;
  const base = `/v1/services/${encodeURIComponent(sid)}`;
  return {
    sid,
    type: connector.type,
    title: config.title ?? sid,
    description: config.description ?? '',
    capabilities: {
      repository: !!caps.repository,
      commands: caps.repository?.commands ?? [],
      tasks: caps.tasks ? { actions: caps.tasks.actions } : null,
      functions: !!caps.functions,
      intake: !!caps.intake,
    },
    links: {
      self: { href: base },
      ...(caps.repository ? { repo: { href: `${base}/repo` } } : {}),
      ...(caps.tasks ? { tasks: { href: `${base}/tasks` } } : {}),
      ...(caps.functions ? { functions: { href: `${base}/function` } } : {}),
    },
  };
}

