import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import type { BaseAdapter } from '@bull-board/api/dist/queueAdapters/base.js';
import type { Queue } from 'bullmq';

export type { BaseAdapter };

/**
 * The queues as bull-board adapters (issue 24, item 8), made here because
 * this folder is the only one that touches BullMQ's queues. Read-only unless
 * configured otherwise (`admin.queueDashboard.readOnly`): no retry, clean,
 * promote or delete from the page; the API side refuses them as well
 * (`src/api/admin/queue-dashboard.ts`).
 */
export function queueBoardAdapters(queues: readonly Queue[], readOnly: boolean): BaseAdapter[] {
  return queues.map((q) => new BullMQAdapter(q, { readOnlyMode: readOnly, allowRetries: !readOnly, description: `jobs of the ${q.name} queue` }));
}
