import { systemPrincipal } from '../auth/principal.js';
import { entryHref } from '../connectors/facets/repository.js';
import type { WorkPort } from '../connectors/ports.js';
import { AppError } from '../errors/app-error.js';
import { LIST_FORMATS } from '../formats/index.js';
import type { Services } from './services.js';

/**
 * The intakes' `WorkPort` over the runtime's services: the same operations,
 * rights and rules the API applies, done as the system user the intake
 * names (`creator`), each idempotent by the id the intake fixed at its claim.
 */
export function workPort(s: Pick<Services, 'repository' | 'tasks' | 'taskLists' | 'taskActions'>): WorkPort {
  return {
    async storeDocument(doc) {
      const entry = await s.repository.ingest(systemPrincipal(doc.creator), doc);
      return { uuid: entry.uuid, name: entry.name, href: entryHref(entry) };
    },

    async storedDocument(service, uuid, sha256) {
      const entry = await s.repository.storedIntake(service, uuid);
      return entry?.content_version && entry.sha256 === sha256 ? { uuid: entry.uuid, name: entry.name, href: entryHref(entry) } : undefined;
    },

    async removeDocument(service, uuid) {
      await s.repository.removeEntry(service, uuid);
    },

    async createTask(task) {
      const p = systemPrincipal(task.creator);
      // created at once (the common case); a task of this tid made earlier (a retry after a crash) is
      // refused ALREADY_EXISTS and found below
      try {
        if (task.list) {
          const format = LIST_FORMATS.find((f) => f.name === task.list!.format)!;
          await s.taskLists.createFromList(p, task.service, format, task.list.body, task.owner, { tid: task.tid, name: task.name, metadata: task.metadata });
        } else {
          const listItems = (task.items ?? []).map((i) => ({ href: i.href, metadata: i.metadata ?? {} }));
          await s.taskLists.create(p, task.service, { name: task.name, metadata: task.metadata, lists: { input: { metadata: {}, embedded: { listItems } } } }, task.owner, task.tid);
        }
      } catch (err) {
        // made meanwhile under the same tid (another taker of the same claim): it is this task, not a refusal
        if (err instanceof AppError && err.code === 'ALREADY_EXISTS' && await exists(() => s.tasks.get(p, task.service, task.tid))) return false;
        throw err;
      }
      return true;
    },

    async startTask(service, tid, creator) {
      const p = systemPrincipal(creator);
      try {
        await s.taskActions.act(p, service, tid, 'start');
      } catch (err) {
        // started already (a retry after a crash): a task that is no longer idle is left as it is
        if (!(err instanceof AppError && err.code === 'ACTION_NOT_ALLOWED')) throw err;
      }
    },

    async removeTask(service, tid, creator) {
      const p = systemPrincipal(creator);
      if (!(await exists(() => s.tasks.get(p, service, tid)))) return;
      await s.tasks.remove(p, service, tid);
    },
  };
}

/** False when `get` answers 404 for a task. */
async function exists(get: () => Promise<unknown>): Promise<boolean> {
  try {
    await get();
    return true;
  } catch (err) {
    if (err instanceof AppError && err.code === 'TASK_NOT_FOUND') return false;
    throw err;
  }
}
