/**
 * Print job states as data (DESIGN.md section 7): the API operations, the
 * dispatch engine and the tests all read these tables; nothing else decides
 * whether a job may change state.
 */
export const JOB_STATES = [
  'waitpreprocessing', 'preprocessing', 'waitprocessing', 'processing',
  'postponed', 'paused', 'processed', 'canceled', 'error',
] as const;
export type JobState = (typeof JOB_STATES)[number];

/** States a job ends in; retention counts from reaching one. */
export const FINAL_JOB_STATES: readonly JobState[] = ['processed', 'canceled', 'error'];

/** Waiting for the engine: preprocessing, printing, or a retry after the printer was unreachable. */
export const WAITING_JOB_STATES: readonly JobState[] = ['waitpreprocessing', 'waitprocessing', 'postponed'];

/**
 * Every transition a job can make, by whoever makes it (API operation or
 * engine). A transition not listed here is refused by `transitionJob`.
 */
export const JOB_TRANSITIONS: Readonly<Record<JobState, readonly JobState[]>> = {
  // the engine takes it into preprocessing; an operator pauses or cancels it; the
  // reconciler's abandon (the printer's dispatch failed for good on it) ends it in error
  waitpreprocessing: ['preprocessing', 'waitprocessing', 'paused', 'canceled', 'error'],
  // flow done (waitprocessing) or failed (error); a crash re-queues it (waitpreprocessing)
  preprocessing: ['waitprocessing', 'waitpreprocessing', 'error', 'canceled'],
  waitprocessing: ['processing', 'waitpreprocessing', 'paused', 'canceled', 'error'],
  // delivered (processed), printer unreachable (postponed), permanent failure or
  // "delivery uncertain" after a crash (error); cancel stops what has not been handed off
  processing: ['processed', 'postponed', 'error', 'canceled'],
  postponed: ['processing', 'waitprocessing', 'paused', 'error', 'canceled'],
  paused: ['waitpreprocessing', 'waitprocessing', 'canceled'],
  // repeat prints a finished job again
  processed: ['waitpreprocessing', 'waitprocessing'],
  canceled: ['waitpreprocessing', 'waitprocessing'],
  error: ['waitpreprocessing', 'waitprocessing'],
};

/** The job operations of the API (PUT /v3/jobs/{id}/<op>). */
export const JOB_OPERATIONS = ['cancel', 'pause', 'resume', 'repeat', 'move'] as const;
export type JobOperation = (typeof JOB_OPERATIONS)[number];

/**
 * From which states each operation is allowed (else 412 INVALID_STATE) and
 * where it takes the job. `requeue` means: back to the waiting state the job
 * needs next (waitpreprocessing while a flow still has to run, else
 * waitprocessing; see `requeueState`). `same` keeps the state (move only
 * changes the printer).
 */
export const JOB_OPERATION_RULES: Readonly<Record<JobOperation, { from: readonly JobState[]; to: JobState | 'requeue' | 'same' }>> = {
  cancel: { from: JOB_STATES.filter((s) => !FINAL_JOB_STATES.includes(s)), to: 'canceled' },
  pause: { from: WAITING_JOB_STATES, to: 'paused' },
  resume: { from: ['paused'], to: 'requeue' },
  repeat: { from: FINAL_JOB_STATES, to: 'requeue' },
  move: { from: JOB_STATES.filter((s) => !FINAL_JOB_STATES.includes(s) && s !== 'processing'), to: 'same' },
};

/**
 * States a job cannot be deleted in (409 JOB_IN_DELIVERY): `processing` is a
 * hand-off to the device in progress, whose outcome the engine writes to the
 * job. Cancel it (the delivery's outcome is then only noted) or wait for the
 * outcome, then delete. A job in `preprocessing` may go: its flow's result is
 * dropped.
 */
export const UNDELETABLE_JOB_STATES: readonly JobState[] = ['processing'];

export const isFinalJobState = (s: JobState): boolean => FINAL_JOB_STATES.includes(s);
export const canJobMove = (from: JobState, to: JobState): boolean => JOB_TRANSITIONS[from].includes(to);
export const operationAllowed = (op: JobOperation, from: JobState): boolean => JOB_OPERATION_RULES[op].from.includes(from);

/** The waiting state a job goes back to: preprocessing still to do when it has a flow and no flow output. */
export function requeueState(job: { flow: string | null; stages: readonly { stage: string }[] }): JobState {
  return job.flow && !job.stages.some((st) => st.stage === 'preprocessed') ? 'waitpreprocessing' : 'waitprocessing';
}

/** The state a new job starts in. */
export const initialJobState = (flow: string | null | undefined): JobState => (flow ? 'waitpreprocessing' : 'waitprocessing');
