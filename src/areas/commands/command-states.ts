/**
 * Repository command states as data: the runner and the tests read this table.
 * A final state is delivered once, then the command is gone.
 */
export const COMMAND_STATES = ['queued', 'running', 'success', 'failure'] as const;
export type CommandState = (typeof COMMAND_STATES)[number];

export const COMMAND_TRANSITIONS: Readonly<Record<CommandState, readonly CommandState[]>> = {
  queued: ['running', 'failure'],
  // running -> running: a worker picks up a command whose previous worker died
  running: ['running', 'success', 'failure'],
  success: [],
  failure: [],
};

export const isFinal = (s: CommandState): boolean => COMMAND_TRANSITIONS[s].length === 0;
export const canMove = (from: CommandState, to: CommandState): boolean => COMMAND_TRANSITIONS[from].includes(to);

/** The states from which the table allows a move to `to` (the guard of a one-statement transition). */
export const statesMovingTo = (to: CommandState): CommandState[] => COMMAND_STATES.filter((from) => canMove(from, to));
