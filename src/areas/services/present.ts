import type { Connector } from '../../connectors/connector.js';
import type { ServiceConfig } from '../../config/schema.js';

/**
 * A service as `GET /v1/services` shows it: what it is and what its connector
 * can do. The capabilities follow from the facets the connector has; there
 * are no separate flags to keep in step.
 */
export function presentService(sid: string, connector: Connector, config: ServiceConfig) {
  const { repository, tasks, functions, intake } = connector;
  const base = `/v1/services/${encodeURIComponent(sid)}`;
  return {
    sid,
    type: connector.type,
    title: config.title ?? sid,
    description: config.description ?? '',
    capabilities: {
      repository: !!repository,
      commands: repository?.commands ?? [],
      tasks: tasks ? { actions: tasks.actions } : null,
      functions: !!functions,
      intake: !!intake,
    },
    links: {
      self: { href: base },
      ...(repository ? { repo: { href: `${base}/repo` } } : {}),
      ...(tasks ? { tasks: { href: `${base}/tasks` } } : {}),
      ...(functions ? { functions: { href: `${base}/function` } } : {}),
    },
  };
}
