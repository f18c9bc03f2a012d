/**
 * The experiment file: one format for "Export experiment", "Import experiment" and the IndexedDB
 * autosave (its bytes: expCodec.ts). It holds the config, the finished stages' records, every
 * agent's parameters and optimizer state at the last stage boundary, β per agent, the seats'
 * checkpoints, and a cursor naming the last completed agent step (stepRef.ts) — a run is fixed by
 * its seed, so restoring the boundary and replaying lands exactly on it. Parsing never throws:
 * every problem is `{ ok: false, code, error }` with a specific message.
 *
 * Not here: reading or writing files and IndexedDB (persist.ts, autosave.ts), rebuilding a team
 * (session.ts). No React, no DOM: runs in Node tests.
 */
import * as v from 'valibot';
import { ConfigError } from '../core/errors';
import { describeValue as describe, firstProblem } from '../core/schema';
import { type Config, isLlmTask, parseConfig, resolvedProtocol } from '../sat/config';
import { recordSchemas } from '../sat/records';
import type { SequentialSummary } from '../sat/certificate';
import type { StageRecord } from '../sat/stage';
import type { AgentInfo, AgentSnapshot } from '../sat/types';
import { makeGame, type TaskName } from '../tasks/index';
import {
  type Blob64,
  clip,
  encodeContainer,
  EXPERIMENT_FORMAT,
  EXPERIMENT_VERSION,
  type ExperimentErrorCode,
  FileFail,
  guarded,
  MAX_EXPERIMENT_BYTES,
  MAX_REASON,
  PART_FORMATS,
  type ParseResult,
  readPart,
  toJson,
} from './expCodec';
import { agentInfoSchema, checkpointRule, failedField, type SeatCheckpoint, seatCheckpointSchema, stepRefSchema } from './payloads';
import type { StepRef } from './stepRef';

export {
  type Blob64,
  decodeContainer,
  encodeContainer,
  EXPERIMENT_FORMAT,
  EXPERIMENT_MAGIC,
  EXPERIMENT_VERSION,
  type ExperimentErrorCode,
  MAX_EXPERIMENT_BYTES,
  MAX_HEADER_DEPTH,
  OLD_EXPERIMENT_MAGIC,
  PART_FORMATS,
  type ParseResult,
} from './expCodec';

/** Largest β read (the adaptive β is capped there, as in monitor.ts). */
export const MAX_BETA = 1e4;
/** Longest settings key read (the real ones are under 20 characters). */
const MAX_KEY_LENGTH = 64;
/** Suggested file name extension for exports. */
export const EXPERIMENT_EXTENSION = '.satexp';

/** One agent as saved: its state at the last stage boundary, and what it is. */
export interface SavedAgent {
  readonly snapshot: AgentSnapshot;
  /** Name, kind, parameter count and backend, when known (checked against the snapshot's size). */
  readonly info?: AgentInfo;
}

export interface ExperimentData {
  readonly config: Config;
  /** The preset the experiment started from (shown in the gallery; "" when none). */
  readonly presetName: string;
  /** When the experiment was created (ISO 8601). */
  readonly createdAt: string;
  readonly stages: readonly StageRecord[];
  /** The agents as they were after the last finished stage. */
  readonly agents: readonly SavedAgent[];
  /** β per agent at the boundary (adaptive β is carried across stages). */
  readonly betas: readonly number[];
  /** The last completed agent step: { stage: stages.length }, or { stage: stages.length + 1, agent }. */
  readonly cursor: StepRef;
  /** Language tasks: the seats on a checkpoint of their own ([] when none); absent in files written before seats were recorded. */
  readonly checkpoints?: readonly SavedCheckpoint[];
}

/** A seat's checkpoint as the file records it (payloads.ts; the file always names the quantization). */
export type SavedCheckpoint = SeatCheckpoint & { readonly quant: NonNullable<SeatCheckpoint['quant']> };


type Head = Pick<ExperimentData, 'config' | 'presetName' | 'createdAt' | 'cursor' | 'checkpoints'>;
type Boundary = Pick<ExperimentData, 'agents' | 'betas'>;

function headJson(d: Head, blobs: Blob64[]): Record<string, unknown> {
  const cursor = d.cursor.agent === undefined ? { stage: d.cursor.stage } : { stage: d.cursor.stage, agent: d.cursor.agent };
  const out: Record<string, unknown> = { createdAt: d.createdAt, presetName: d.presetName, config: toJson(d.config, blobs, 'config'), cursor };
  if (d.checkpoints !== undefined) out.checkpoints = d.checkpoints.map((c) => ({ agent: c.agent, name: c.name, hash: c.hash, quant: c.quant, ...(c.onnx ? { onnx: c.onnx } : {}) }));
  return out;
}

function boundaryJson(d: Boundary, blobs: Blob64[]): Record<string, unknown> {
  const agents = d.agents.map((a, i) => {
    const out: Record<string, unknown> = {
      params: toJson(a.snapshot.params, blobs, `agents[${i}].params`),
      optim: toJson(a.snapshot.optim, blobs, `agents[${i}].optim`),
    };
    if (a.info !== undefined) out.info = toJson(a.info, blobs, `agents[${i}].info`);
    return out;
  });
  return { betas: toJson(d.betas, blobs, 'betas'), agents };
}

/**
 * The experiment as a file. Deterministic: the same data gives the same bytes. Throws FormatError
 * only for data that cannot be stored (a Map, a sparse array, …) or a file over
 * MAX_EXPERIMENT_BYTES — never for what the stage loop records. Its JSON is `{ createdAt,
 * presetName, config, betas, cursor, agents: [{ info?, params, optim }], stages, checkpoints? }`
 * (`checkpoints`: the language seats on a Hugging Face checkpoint of their own, payloads.ts);
 * cursor { stage: k } when k stages are finished, { stage: k + 1, agent: a } when agent a's update
 * was the last step done of stage k + 1.
 */
export function serializeExperiment(data: ExperimentData): Uint8Array {
  const blobs: Blob64[] = [];
  const header = { ...headJson(data, blobs), ...boundaryJson(data, blobs), stages: toJson(data.stages, blobs, 'stages') };
  return encodeContainer(JSON.stringify(header), blobs);
}

/** The autosave's head part: config, preset, date and cursor (a few kilobytes, rewritten after every agent step). */
export function serializeHead(head: Head): Uint8Array {
  const blobs: Blob64[] = [];
  return encodeContainer(JSON.stringify(headJson(head, blobs)), blobs, EXPERIMENT_VERSION, PART_FORMATS.head);
}

/** The autosave's boundary part: the agents and β after the last finished stage (rewritten once per stage). */
export function serializeBoundary(boundary: Boundary): Uint8Array {
  const blobs: Blob64[] = [];
  // Stored, not deflated: the agents' parameters and optimizer state are f32 mantissas, which
  // deflate shrinks by ~7 % for ~8× the time (1 MB: 35 ms against 4.4 ms in Node) — time the
  // page's main thread spent after every stage, between the stage and the next step.
  return encodeContainer(JSON.stringify(boundaryJson(boundary, blobs)), blobs, EXPERIMENT_VERSION, PART_FORMATS.boundary, 0);
}

/** The autosave's part for one finished stage (written once). */
export function serializeStage(rec: StageRecord): Uint8Array {
  const blobs: Blob64[] = [];
  return encodeContainer(JSON.stringify(toJson(rec, blobs, `stages[${rec.stage - 1}]`)), blobs, EXPERIMENT_VERSION, PART_FORMATS.stage);
}

/**
 * Reads an experiment file. Never throws: `{ ok: true, value }`, or `{ ok: false, code, error }`
 * whose message names the problem (and, for truncation, the byte) and says nothing was loaded.
 * `maxBytes` caps the inflated contents (lowered by tests, to try a gzip bomb cheaply).
 */
export function parseExperimentFile(bytes: Uint8Array, maxBytes = MAX_EXPERIMENT_BYTES): ParseResult<ExperimentData> {
  return guarded(() => {
    const { value, checkUsed } = readPart(bytes, EXPERIMENT_FORMAT, [], maxBytes);
    const data = readExperiment(value);
    checkUsed();
    return data;
  });
}

/**
 * Puts the autosave's parts back together and checks the whole exactly as parseExperimentFile
 * checks a file (same messages). `stages[i]` is stage i + 1's part.
 */
export function parseParts(head: Uint8Array, boundary: Uint8Array, stages: readonly Uint8Array[]): ParseResult<ExperimentData> {
  return guarded(() => {
    const h = readPart(head, PART_FORMATS.head);
    const b = readPart(boundary, PART_FORMATS.boundary);
    const recs = stages.map((bytes, i) => readPart(bytes, PART_FORMATS.stage, ['stages', i]));
    need(isObj(h.value) && isObj(b.value), 'format', 'its head or boundary part is not a JSON object.');
    const data = readExperiment({ ...h.value, ...b.value, stages: recs.map((r) => r.value) });
    for (const part of [h, b, ...recs]) part.checkUsed();
    return data;
  });
}

// ---------------------------------------------------------------------------------------------
// Validation of the header's contents.

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !ArrayBuffer.isView(v);
}

function need(cond: boolean, code: ExperimentErrorCode, reason: string): asserts cond {
  if (!cond) throw new FileFail(code, reason);
}

/** The decoded header (blob references resolved), checked field by field. */
function readExperiment(h: unknown): ExperimentData {
  need(isObj(h), 'format', 'its header is not a JSON object.');
  need(typeof h.createdAt === 'string' && h.createdAt.length <= 64, 'format', 'its header has no valid "createdAt" date.');
  need(typeof h.presetName === 'string' && h.presetName.length <= 64, 'format', 'its header has no valid "presetName".');

  // The config, checked as any input is.
  need(isObj(h.config), 'config', 'its header has no config object.');
  const longKey = Object.keys(h.config).find((k) => k.length > MAX_KEY_LENGTH);
  need(longKey === undefined, 'config', `its settings have a key of ${longKey?.length} characters (${describe(longKey)}); no setting has a name that long.`);
  // parseConfig prints a value with String(): an object would read "[object Object]".
  const odd = Object.entries(h.config).find(([, v]) => !isSettingValue(v) && !(Array.isArray(v) && v.every(isSettingValue)));
  need(odd === undefined, 'config', `its setting ${JSON.stringify(odd?.[0])} is ${describe(odd?.[1])}; a setting is a number, a text, true or false, or a list of them.`);
  let config: Config;
  try {
    config = parseConfig(h.config);
  } catch (e) {
    throw new FileFail('config', `its settings are not valid: ${clip(e instanceof ConfigError ? e.message : String(e), MAX_REASON)}`);
  }
  const n = config.agents;

  // Agents: one per agent of the config, sizes consistent with each other and with their info.
  need(Array.isArray(h.agents), 'agents', 'its header has no list of agents.');
  need(h.agents.length === n, 'agents', `it holds ${h.agents.length} agents, but its config has agents = ${n}.`);
  const agents: SavedAgent[] = h.agents.map((a: unknown, i: number) => readAgent(a, i));
  checkTableSizes(config, agents);
  const betas = h.betas;
  need(Array.isArray(betas) && betas.length === n && betas.every((b) => typeof b === 'number'), 'agents', `its β list is not ${n} numbers (one per agent).`);
  const badBeta = betas.findIndex((b) => !(Number.isFinite(b) && b >= 0 && b <= MAX_BETA));
  need(badBeta < 0, 'agents', `agent ${badBeta}'s β is ${describe(betas[badBeta])}; a β is a finite number in [0, ${MAX_BETA}].`);

  // Cursor and stages.
  need(Array.isArray(h.stages), 'stages', 'its header has no list of stages.');
  const stages = h.stages as unknown[];
  const cursor = readCursor(h.cursor, stages.length, config);
  stages.forEach((s, i) => checkStage(s, i, n));

  const checkpoints = h.checkpoints === undefined ? undefined : readCheckpoints(h.checkpoints, config);
  return { config, presetName: h.presetName, createdAt: h.createdAt, stages: stages as StageRecord[], agents, betas: betas as number[], cursor, ...(checkpoints ? { checkpoints } : {}) };
}

/** What a file says of a checkpoint entry's field that is wrong (`at`: "its checkpoint entry i"). */
function checkpointProblem(field: string, c: unknown, at: string, n: number): string {
  const rule = checkpointRule(field, n);
  if (field === '' || !isObj(c)) return `${at} is ${describe(c)}, not ${rule.is}.`;
  return `${at} has ${field} ${describe(c[field])}; ${rule.what} is ${rule.is}.`;
}

const fileCheckpointSchema = v.object({ ...seatCheckpointSchema.entries, quant: seatCheckpointSchema.entries.quant.wrapped });

/** The seats' checkpoints: a list of {agent, name, hash, quant}, one entry per agent at most, language tasks only. */
function readCheckpoints(list: unknown, config: Config): SavedCheckpoint[] {
  const n = config.agents;
  need(Array.isArray(list) && list.length <= n, 'agents', `its "checkpoints" is not a list of at most ${n} seats.`);
  need(list.length === 0 || isLlmTask(config.task), 'agents', `it seats checkpoints, but task "${config.task}" is not a language task.`);
  const out: SavedCheckpoint[] = [];
  list.forEach((c: unknown, i: number) => {
    const at = `its checkpoint entry ${i}`;
    const field = failedField(fileCheckpointSchema, c);
    need(field === undefined, 'agents', checkpointProblem(typeof field === 'string' ? field : '', c, at, n));
    const e = c as SavedCheckpoint;
    need(e.agent < n, 'agents', checkpointProblem('agent', e, at, n));
    need(!out.some((x) => x.agent === e.agent), 'agents', `${at} seats agent ${e.agent} a second time.`);
    out.push({ agent: e.agent, name: e.name, hash: e.hash, quant: e.quant, ...(e.onnx ? { onnx: { file: e.onnx.file, mode: e.onnx.mode } } : {}) });
  });
  return out;
}

/** The cursor, a StepRef: the end of the last finished stage, or an agent's step of the next one. */
function readCursor(c: unknown, k: number, config: Config): StepRef {
  const n = config.agents;
  need(v.is(stepRefSchema, c), 'cursor', 'its cursor is not {stage, agent?} with whole numbers ≥ 0.');
  need(k <= config.stages, 'cursor', `it holds ${k} finished stages, more than its config's stages = ${config.stages}.`);
  if (c.agent === undefined) {
    need(c.stage === k, 'cursor', `its cursor says ${c.stage} stages are finished, but it holds ${k} stage records.`);
    return { stage: k };
  }
  need(c.stage === k + 1, 'cursor', `its cursor names agent ${c.agent}'s step of stage ${c.stage}, but it holds ${k} stage records, so the stage in progress is ${k + 1}.`);
  need(c.stage <= config.stages, 'cursor', `its cursor names a step of stage ${c.stage}, past the last stage (${config.stages}).`);
  need(c.agent < n, 'cursor', `its cursor names agent ${c.agent}, but the team has only ${n} (agents 0..${n - 1}).`);
  return { stage: c.stage + 0, agent: c.agent + 0 }; // + 0: a −0 tag reads as 0, as it is written back
}

function isSettingValue(v: unknown): boolean {
  return typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean';
}

function readAgent(a: unknown, i: number): SavedAgent {
  need(isObj(a), 'agents', `agent ${i} is not an object.`);
  const { params, optim, info } = a;
  need(params instanceof Float64Array, 'snapshot', `agent ${i} has no parameter blob of doubles.`);
  need(optim instanceof Float64Array, 'snapshot', `agent ${i} has no optimizer-state blob of doubles.`);
  need(optim.length === 1 + 2 * params.length, 'snapshot', `agent ${i}'s snapshot sizes are inconsistent: ${params.length} parameters need an optimizer state of 1 + 2·${params.length} = ${1 + 2 * params.length} values ([step, m…, v…]), it has ${optim.length}.`);
  const p = firstNonFinite(params);
  need(p < 0, 'snapshot', `agent ${i}'s parameter ${p} is ${params[p]}; the saved weights are corrupt (training never saves a non-finite weight).`);
  const q = firstNonFinite(optim);
  need(q < 0, 'snapshot', `agent ${i}'s optimizer state value ${q} is ${optim[q]}; the saved optimizer state is corrupt.`);
  if (info === undefined) return { snapshot: { params, optim } };
  need(
    v.is(agentInfoSchema, info),
    'agents',
    `agent ${i}'s info is not {name, kind: tabular | lm, parameters, backend}.`,
  );
  need(info.parameters === params.length, 'snapshot', `agent ${i}'s snapshot sizes are inconsistent: its info says ${info.parameters} parameters, its parameter blob has ${params.length}.`);
  return { snapshot: { params, optim }, info: { name: info.name, kind: info.kind, parameters: info.parameters, backend: info.backend } };
}

function firstNonFinite(a: Float64Array): number {
  for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i]!)) return i;
  return -1;
}

/** Tabular games: each agent's table must be the game's nObs × nActions for these settings. */
function checkTableSizes(c: Config, agents: readonly SavedAgent[]): void {
  if (isLlmTask(c.task)) return; // a language agent's size depends on the model file, checked when restored
  const game = makeGame(c.task as TaskName, { agents: c.agents, actions: c.actions, protocol: resolvedProtocol(c), taskSeed: c.taskSeed, penaltyK: c.penaltyK });
  agents.forEach((a, i) => {
    const rows = game.nObs[i] ?? 0;
    const cols = game.nActions[i] ?? 0;
    need(
      a.snapshot.params.length === rows * cols,
      'snapshot',
      `agent ${i}'s snapshot has ${a.snapshot.params.length} parameters, but with these settings the ${c.task} game gives it a ${rows}×${cols} table (${rows * cols}).`,
    );
  });
}

/**
 * One stage record: every field of its schema, then what ties them together — its number, σ a
 * permutation of the agents, one step per agent in σ's order (a finished stage has them all), each
 * step numbered by stage and position, and its certificate input for its own agent.
 */
function checkStage(s: unknown, i: number, n: number): void {
  const at = `stage record ${i + 1}`;
  const bad = (what: string) => new FileFail('stages', `${at} is malformed: ${what}.`);
  if (!isObj(s)) throw bad(`it is ${describe(s)}, not an object`);
  if (s.stage === undefined) throw bad(`it has no "stage" number (expected ${i + 1})`);
  if (s.stage !== i + 1) throw bad(`it is numbered ${describe(s.stage)}, expected ${i + 1}`);
  const steps = s.steps;
  if (!Array.isArray(steps) || steps.length !== n) throw bad(`"steps" is ${describe(steps)}, expected a list of ${n} agent steps (one per agent)`);
  // The schema checks the steps first; a problem in one is named "step k.…".
  const problem = firstProblem(recordSchemas(n).stage, s);
  if (problem !== undefined) throw bad(problem.replace(/^steps\[(\d+)\]/, 'step $1'));
  const order = s.order as number[];
  if (order.length !== n || new Set(order).size !== n) throw bad(`"order" [${order.slice(0, 8).join(', ')}] is not a permutation of the agents 0..${n - 1}`);
  (steps as StageRecord['steps']).forEach((st, k) => {
    const sat = `step ${k}`;
    if (st.stage !== i + 1 || st.position !== k) throw bad(`${sat} is numbered stage ${st.stage}, position ${st.position}`);
    if (st.agent !== order[k]) throw bad(`${sat} is agent ${st.agent}'s, but σ puts agent ${order[k]} at position ${k}`);
    if (st.cert.agent !== st.agent) throw bad(`${sat} is agent ${st.agent}'s, but its certificate input is agent ${st.cert.agent}'s`);
  });
  const seq = (s as unknown as StageRecord).certificate.sequential;
  if (seq) {
    const problem = sequentialProblem(seq);
    if (problem !== undefined) throw bad(`certificate.sequential ${problem}`);
  }
}

/**
 * What ties a sequential certificate's looks together (docs/certificate.md §5.3): one look a round,
 * each after a whole round, at most the planned rounds, the bound a running maximum; a stage that
 * stopped before its last round stopped at its first positive bound or as futile, and a budget
 * stop drew every round.
 */
function sequentialProblem(q: SequentialSummary): string | undefined {
  const k = q.looks.length;
  if (k < 1 || k > q.maxRounds) return `has ${k} looks, expected 1 to its ${q.maxRounds} rounds`;
  const off = q.looks.findIndex((l, i) => l.units !== (i + 1) * q.roundUnits);
  if (off >= 0) return `look ${off} is after ${q.looks[off]!.units} units, expected ${(off + 1) * q.roundUnits} (rounds of ${q.roundUnits})`;
  const fall = q.looks.findIndex((l, i) => i > 0 && !(l.lower >= q.looks[i - 1]!.lower));
  if (fall >= 0) return `look ${fall}'s bound ${q.looks[fall]!.lower} is below the look before it (the bound is a running maximum)`;
  const last = q.looks[k - 1]!.lower;
  if ((q.stop === 'certified') !== last > 0) return `stopped "${q.stop}" with a last bound of ${last}`;
  if (q.stop === 'budget' && k !== q.maxRounds) return `stopped at its budget after ${k} of ${q.maxRounds} rounds`;
  if (k < q.maxRounds && q.looks.slice(0, -1).some((l) => l.lower > 0)) return 'drew on after its bound was above 0 and stopped before its last round';
  return undefined;
}