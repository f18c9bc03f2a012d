/**
 * The one way the app names an agent step — the selection in view, a link's "jump to", the save
 * file's cursor, the replay after a failed step, the charts' "which update wrote this message".
 * Stage and agent suffice because every agent updates exactly once per stage (docs/method.md §3);
 * where the step sits in σ is read off the records (`findStep`).
 *
 * Not here: drawing a selection (components/Timeline.tsx), reading a link's step (share.ts) or a
 * file's cursor (savefile.ts) — those check the numbers against the config.
 */
import type { AgentStepRecord } from '../sat/stage';

/** One agent step: agent `agent`'s update in stage `stage`, or (no agent) the end of that stage. */
export interface StepRef {
  /** 1-based stage (0 only in a save file's cursor: nothing run yet). */
  readonly stage: number;
  /** 0-based agent index; absent = the stage's last step. */
  readonly agent?: number;
}

/** True when `a` and `b` name the same step (both null counts as the same). */
export function sameStep(a: StepRef | null | undefined, b: StepRef | null | undefined): boolean {
  if (!a || !b) return !a && !b;
  return a.stage === b.stage && a.agent === b.agent;
}

/** The ref of a recorded agent step. */
export function refOf(step: Pick<AgentStepRecord, 'stage' | 'agent'>): StepRef {
  return { stage: step.stage, agent: step.agent };
}

/**
 * The recorded step `ref` names among `steps` (every agent step so far, in execution order), or
 * null when it has not run: agent `agent`'s step of that stage, or the stage's last one.
 */
export function findStep(steps: readonly AgentStepRecord[], ref: StepRef | null | undefined): AgentStepRecord | null {
  if (!ref) return null;
  if (ref.agent !== undefined) return steps.find((s) => s.stage === ref.stage && s.agent === ref.agent) ?? null;
  let last: AgentStepRecord | null = null;
  for (const s of steps) if (s.stage === ref.stage) last = s;
  return last;
}

/** Whether the run described by `stages` finished stages and `partial` (the steps of the next one) has reached `ref`. */
export function reached(stagesDone: number, partial: readonly Pick<AgentStepRecord, 'agent'>[], ref: StepRef): boolean {
  if (stagesDone >= ref.stage) return true;
  return ref.agent !== undefined && stagesDone === ref.stage - 1 && partial.some((p) => p.agent === ref.agent);
}
