/**
 * The stage loop's records as runtime schemas: every field of a stage record (src/sat/stage.ts
 * StageRecord) and of its agent steps, with its type, written once. Experiment files and the
 * autosave check what they read against them (src/app/savefile.ts); the compile-time checks at the
 * end fail when a record type gains a field the schema lacks, so a new field cannot make saved
 * files stop opening unnoticed.
 *
 * Not here: what ties a record's fields together (σ a permutation, steps in σ's order: savefile.ts).
 */
import * as v from 'valibot';
import { agentIndex, anyNumber, bool, count, expecting, fields, listOf, numbers, oneOf, text, type SameKeys } from '../core/schema';
import { CERT_ESTIMATORS, type AgentCertInput, type BoundTerms, type Certificate, type SequentialSummary, type TeamCertStats } from './certificate';
import type { TeamEvaluation } from './env/types';
import type { HeldCheck } from './heldCheck';
import type { TrustCheck } from './monitor';
import type { AgentStepRecord, Metrics, StageRecord, SwapSummary } from './stage';
import { LAMBDA_EDGES } from './stage0';

function isMetric(x: unknown): boolean {
  return typeof x === 'number' || (Array.isArray(x) && x.every((y) => typeof y === 'number'));
}

/** {name: number | number[]}: the message names the first metric that is neither. */
export const metricsSchema = v.custom<Metrics>(
  (x) => x !== null && typeof x === 'object' && !Array.isArray(x) && !ArrayBuffer.isView(x) && Object.values(x).every(isMetric),
  (issue) => {
    const x = issue.input;
    if (x === null || typeof x !== 'object' || Array.isArray(x) || ArrayBuffer.isView(x)) return expecting('an object of metrics');
    const k = Object.keys(x).find((key) => !isMetric((x as Record<string, unknown>)[key]))!;
    return `{path}: metric ${JSON.stringify(k.length > 60 ? `${k.slice(0, 60)}…` : k)} is neither a number nor a list of numbers`;
  },
);

const doubles = v.custom<Float64Array>((x) => x instanceof Float64Array, '{path} is not an array of doubles (it is {value})');
const boundTerms = fields({ ...numbers('gain', 'gainInSample', 'shift', 'bias', 'finite', 'lower', 'oracle'), certified: bool });
const trustCheck = fields({ ...numbers('q', 'mean', 'max', 'violRate'), ok: bool });
const teamCertStats = fields({ ...numbers('ess', 'truncationCost', 'maxRatio'), mismatches: count, episodes: count });
const certLook = fields({ units: count, ...numbers('gain', 'lower') });
const sequentialSummary = fields({ roundUnits: count, maxRounds: count, horizon: count, stop: oneOf(['certified', 'futile', 'budget']), looks: listOf(certLook), unitEpisodes: v.optional(count) });
const evaluation = fields({ J: anyNumber, ci: anyNumber, exact: bool, accuracy: v.optional(anyNumber) });
const heldCheck = fields({ state: oneOf(['held', 'not held', 'undecided', 'unchecked']), ...numbers('estimate', 'se'), pairs: count });
const certificate = fields({
  chosen: boundTerms,
  gamma: boundTerms,
  episodic: boundTerms,
  form: oneOf(['episodic', 'gamma']),
  // Absent in records written before the team-level certificate (docs/certificate.md §5.1).
  scope: v.optional(oneOf(['team', 'agents'])),
  team: v.optional(teamCertStats),
  // Absent in records written before the sequential certificate (docs/certificate.md §5.3).
  sequential: v.optional(sequentialSummary),
  refused: v.optional(text),
  // Absent in tabular records and in language records older than the mixture estimator (§5.4).
  estimator: v.optional(oneOf(CERT_ESTIMATORS)),
});

/** The schemas of a team of `n` agents' records (agent indices are checked against n). */
function build(n: number) {
  const agent = agentIndex(n);
  const cert = fields({
    agent,
    ...numbers('gain', 'lower', 'gainInSample', 'clip', 'klMax', 'bias'),
    range: listOf(anyNumber, 2),
    units: count,
    episodes: count,
    turns: count,
    moved: bool,
  });
  const step = fields({
    stage: count,
    position: count,
    agent,
    metrics: metricsSchema,
    advNorm: doubles,
    advRaw: doubles,
    kl: doubles,
    delta: anyNumber,
    check: trustCheck,
    accepted: bool,
    backtracks: count,
    ...numbers('jBefore', 'jAfter'),
    cert,
  });
  const swap = fields({
    agent,
    incoming: text,
    stage0: bool,
    klQuantiles: fields(numbers('q50', 'q90', 'q99')),
    lambdaHist: listOf(count, LAMBDA_EDGES.length - 1),
    ...numbers('delta0', 'outsideBefore', 'outsideAfter', 'jBefore', 'jAfter', 'certRadius', 'certFloor'),
  });
  // Steps first, so that a record's first problem is its earliest step's.
  const stage = fields({
    steps: v.array(step, expecting(`a list of ${n} agent steps (one per agent)`)),
    stage: count,
    order: listOf(agent),
    certificate,
    ...numbers('jBefore', 'jAfter'),
    metrics: metricsSchema,
    evaluation,
    swap: v.optional(swap),
    // Absent in records written before "held" was a test (src/sat/heldCheck.ts).
    held: v.optional(heldCheck),
  });
  return { step, cert, swap, stage };
}

type Schemas = ReturnType<typeof build>;
const cache = new Map<number, Schemas>();

/** The record schemas for a team of `n` agents. */
export function recordSchemas(n: number): Schemas {
  let s = cache.get(n);
  if (!s) cache.set(n, (s = build(n)));
  return s;
}

// Compile-time agreement of the schemas with the record types: the same fields at every level,
// and every value of the record type accepted by the schema's type.
type Out<K extends keyof Schemas> = v.InferOutput<Schemas[K]>;
type Accepts<S, T> = [T] extends [S] ? true : false;
type Agree<S, T> = SameKeys<S, T> extends true ? Accepts<S, T> : false;
type All<T extends readonly true[]> = T;
export type RecordSchemasAgree = All<
  [
    Agree<Out<'stage'>, StageRecord>,
    Agree<Out<'step'>, AgentStepRecord>,
    Agree<Out<'cert'>, AgentCertInput>,
    Agree<Out<'swap'>, SwapSummary>,
    Agree<v.InferOutput<typeof certificate>, Certificate>,
    Agree<v.InferOutput<typeof boundTerms>, BoundTerms>,
    Agree<v.InferOutput<typeof trustCheck>, TrustCheck>,
    Agree<v.InferOutput<typeof teamCertStats>, TeamCertStats>,
    Agree<v.InferOutput<typeof sequentialSummary>, SequentialSummary>,
    Agree<v.InferOutput<typeof heldCheck>, HeldCheck>,
    SameKeys<Omit<v.InferOutput<typeof evaluation>, 'accuracy'>, TeamEvaluation>,
  ]
>;

/** A run as the CLI's --json writes it: the preset, the config, J before the first stage and each stage's metrics. */
export const runSummarySchema = v.object({
  preset: v.optional(v.string()),
  config: v.record(v.string(), v.unknown()),
  j0: anyNumber,
  stages: v.array(metricsSchema),
});
export type RunSummary = v.InferOutput<typeof runSummarySchema>;
