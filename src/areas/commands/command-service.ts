import { randomUUID } from 'node:crypto';
import { SHARED, type Policy } from '../../auth/policy.js';
import type { Principal } from '../../auth/principal.js';
import type { CommandName } from '../../connectors/connector.js';
import { AppError } from '../../errors/app-error.js';
import type { Outbox } from '../../outbox/outbox.js';
import type { Database } from '../../storage/driver/database.js';
import { refuseUsers, type RepositoryService } from '../repository/repository-service.js';
import { isAncestorOrSelf } from '../repository/entry-store.js';
import { parseParams } from './command-params.js';
import { isFinal } from './command-states.js';
import { presentCommand, type CommandStatus } from './present.js';
import * as commands from './command-store.js';
import type { CommandRow } from './command-store.js';
import { MicroBatcher } from '../../storage/micro-batcher.js';

/**
 * Launching and reading repository commands. Launch checks what can be checked
 * now (rights, existence, the document-in-use rule), stores the command and
 * its job in one transaction (the outbox: no wait on Redis); a worker runs it
 * (command-runner.ts).
 */
export class CommandService {
  /**
   * The status reads of the same moment go as one statement (`cid = ANY`):
   * polling clients cost a round trip per batch, not per request; a read's
   * statement starts after it was asked for, so it sees every change
   * committed before the request came.
   */
  private readonly reads = new MicroBatcher<string, CommandRow | undefined>({
    many: async (cids) => {
      const byId = new Map((await commands.getCommands(this.db, [...new Set(cids)])).map((c) => [c.cid, c]));
      return cids.map((cid) => byId.get(cid.toLowerCase()));
    },
  }, 2, 256, { gatherTurn: true });

  constructor(
    private readonly db: Database,
    private readonly repo: RepositoryService,
    private readonly policy: Policy,
    private readonly outbox: Outbox,
    private readonly expirySec: number,
  ) {}

  /** 404 unless the service has a repository that runs commands (and `command`, when named). */
  private supports(sid: string, command?: CommandName): void {
    const cmds = this.repo.backend(sid).backend.commands;
    if (cmds.length === 0) throw new AppError('NO_COMMANDS', `service "${sid}" does not run repository commands`, { sid });
    if (command && !cmds.includes(command)) throw new AppError('COMMAND_UNSUPPORTED', `service "${sid}" does not run the ${command} command`, { sid, command });
  }

  async launch(p: Principal, sid: string, command: CommandName, raw: unknown): Promise<{ cid: string }> {
    this.supports(sid, command);
    const params = parseParams(command, raw);
    switch (command) {
      case 'copy':
      case 'move': {
        const { source, target, force } = params as { source: string; target: string; force?: boolean };
        // a move looks at the tasks using the source in the same query (refused below, after the other rules)
        const { entry, users } = command === 'move' && !force
          ? await this.repo.getWithUsers(p, sid, source, 'write')
          : { entry: await this.repo.get(p, sid, source, command === 'move' ? 'write' : 'read'), users: [] };
        const dest = await this.repo.get(p, sid, target, 'write');
        if (dest.type !== 'collection') throw new AppError('TARGET_NOT_COLLECTION', `target ${target} is not a collection`);
        if (entry.parent === null) throw new AppError('ROOT_READONLY', 'the root collection cannot be copied or moved');
        if (entry.type === 'collection' && (await isAncestorOrSelf(this.db, sid, entry.uuid, dest.uuid))) {
          throw new AppError('TARGET_INSIDE_SOURCE', 'a collection cannot be copied or moved into itself');
        }
        refuseUsers(users, 'cannot move');
        break;
      }
      case 'delete': {
        const { source, force } = params as { source: string; force: boolean };
        // the entry and the tasks using it in one query
        const { entry, users } = force ? { entry: await this.repo.get(p, sid, source, 'delete'), users: [] } : await this.repo.getWithUsers(p, sid, source, 'delete');
        if (entry.parent === null) throw new AppError('ROOT_READONLY', 'the root collection cannot be deleted');
        refuseUsers(users, 'cannot delete');
        break;
      }
      case 'import': {
        const { target } = params as { target?: string };
        if (!target) this.policy.require(p, 'documents', 'write', SHARED);
        const dest = target ? await this.repo.get(p, sid, target, 'write') : await this.repo.root(sid);
        if (dest.type !== 'collection') throw new AppError('TARGET_NOT_COLLECTION', `target ${dest.uuid} is not a collection`);
        break;
      }
      case 'preview': {
        const entry = await this.repo.get(p, sid, (params as { source: string }).source, 'read');
        if (entry.type !== 'document') throw new AppError('PREVIEW_UNSUPPORTED', 'only documents have previews');
        break;
      }
    }
    const cid = randomUUID();
    // the row and its job in one statement: one round trip, no transaction
    const insert = commands.insertCommandStatement({ cid, sid, command, parameters: params as Record<string, unknown>, creator: p.user }, this.expirySec);
    await this.outbox.addWith(this.db, insert, 'command.run', { cid, sid });
    return { cid };
  }

  /** The status; a final one is returned once and the command is deleted. */
  async status(p: Principal, sid: string, cid: string): Promise<CommandStatus> {
    this.supports(sid);
    this.policy.require(p, 'documents', 'read');
    // A state that is not final is answered from one plain read: polling clients (many, often on one
    // command) never queue on its row lock, which only the delivery of a final state needs.
    const seen = await this.reads.run(cid);
    if (!seen || seen.sid !== sid || !this.policy.may(p, 'documents', 'read', { creator: seen.creator })) {
      throw new AppError('COMMAND_NOT_FOUND', `no command ${cid} in service "${sid}"`, { cid });
    }
    if (!isFinal(seen.state)) return presentCommand(seen);
    // The delete of a delivered or expired command must commit, so the 404 is thrown after the transaction.
    const found = await this.db.transaction(async (tx) => {
      const row = await commands.getCommand(tx, cid, true);
      if (!row || row.sid !== sid) return undefined;
      // somebody else's command is reported absent (404), not forbidden
      if (!this.policy.may(p, 'documents', 'read', { creator: row.creator })) return undefined;
      if (isFinal(row.state) && row.expires.getTime() < Date.now()) {
        await commands.deleteCommand(tx, cid);
        return 'expired' as const;
      }
      if (isFinal(row.state)) await commands.deleteCommand(tx, cid);
      return presentCommand(row);
    });
    if (found === 'expired') throw new AppError('COMMAND_NOT_FOUND', `command ${cid} has expired`, { cid });
    if (!found) throw new AppError('COMMAND_NOT_FOUND', `no command ${cid} in service "${sid}"`, { cid });
    return found;
  }
}
