import { z } from 'zod';
import { AppError } from '../../../errors/app-error.js';
import { FLOW_STEPS, isStepName, STEP_NAMES, type StepName } from './steps.js';

/** One checked step: a known `use` and its `with` after its schema (defaults filled in). */
export interface FlowStep {
  use: StepName;
  with: Record<string, unknown>;
}

/** A flow as stored (DESIGN.md section 7): named, typed, described, and its steps. */
export interface FlowDefinition {
  name: string;
  type: 'standard' | 'custom';
  description: string;
  steps: FlowStep[];
}

export const MAX_FLOW_STEPS = 50;

const envelope = z.strictObject({
  // eslint-disable-next-line no-control-regex -- control characters are what the name must not hold
  name: z.string().trim().min(1).max(200).refine((n) => !/[\u0000-\u001f\u007f/]/.test(n), 'no control characters or slashes'),
  type: z.enum(['standard', 'custom']).default('custom'),
  description: z.string().max(2000).default(''),
  steps: z.array(z.unknown()).max(MAX_FLOW_STEPS),
});
const stepShape = z.strictObject({ use: z.string().max(100), with: z.unknown().optional() });

const issueText = (e: z.ZodError) => e.issues.map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message)).join('; ');

const invalid = (message: string, details: Record<string, unknown>) => new AppError('INVALID_FLOW', message, details);

/**
 * Checks a flow's steps against the catalogue: 400 `INVALID_FLOW` naming the
 * step's index, its `use` and the problem (`details: { step, use, problem }`).
 * Unknown steps are refused; nothing is evaluated.
 */
export function validateSteps(steps: readonly unknown[]): FlowStep[] {
  if (steps.length > MAX_FLOW_STEPS) throw invalid(`a flow has at most ${MAX_FLOW_STEPS} steps`, { problem: 'too many steps' });
  return steps.map((raw, index) => {
    const shape = stepShape.safeParse(raw);
    if (!shape.success) {
      const problem = `a step is { "use": <step>, "with": {...} }: ${issueText(shape.error)}`;
      throw invalid(`steps[${index}]: ${problem}`, { step: index, problem });
    }
    const { use } = shape.data;
    if (!isStepName(use)) {
      const problem = `unknown step (known: ${STEP_NAMES.join(', ')})`;
      throw invalid(`steps[${index}] (${use.slice(0, 100)}): ${problem}`, { step: index, use: use.slice(0, 100), problem });
    }
    const params = FLOW_STEPS[use].schema.safeParse(shape.data.with ?? {});
    if (!params.success) {
      const problem = issueText(params.error);
      throw invalid(`steps[${index}] (${use}): ${problem}`, { step: index, use, problem });
    }
    return { use, with: params.data as Record<string, unknown> };
  });
}

/** A whole flow body (`POST /v3/flows/`): the envelope, then every step; 400 `INVALID_FLOW` on the first problem. */
export function validateFlow(def: unknown): FlowDefinition {
  const res = envelope.safeParse(def);
  if (!res.success) {
    const problem = issueText(res.error);
    throw invalid(`invalid flow: ${problem}`, { problem });
  }
  return { ...res.data, steps: validateSteps(res.data.steps) };
}
