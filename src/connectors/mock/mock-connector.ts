import { z } from 'zod';
import type { Connector, ConnectorType } from '../connector.js';

const optionsSchema = z.strictObject({});

/**
 * A simulated service for demos and tests. It offers no repository, so the
 * repository routes answer 404 for it; task simulation arrives with the task API.
 */
export const mockConnectorType: ConnectorType = {
  type: 'mock',
  description: 'Simulated connector for demos and tests (no repository)',
  create(ctx): Connector {
    optionsSchema.parse(ctx.config.options);
    return { sid: ctx.sid, type: 'mock', capabilities: {} };
  },
};
