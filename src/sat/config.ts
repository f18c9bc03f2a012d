/**
 * The one typed config table (after TensorFlow Playground's PROPS; docs/method.md §11): every
 * setting of an experiment, with its type, default, range and a doc comment written for the
 * person who will read it as a tooltip. A setting is added here and nowhere else: its row's
 * constructor builds its valibot schemas (text from `--set` or a URL, or a link's and a file's
 * typed JSON), its TypeScript type (`Config`) is what those schemas output, its messages come from
 * the row, and the UI form, `--help`, the settings table of the docs and the real-run export
 * (src/bridge/recipe.ts) read the same row.
 *
 * `parseConfig` turns loose input into a checked `Config`, or fails with a `ConfigError` naming
 * the key, the value and what is allowed: unknown keys (with a suggestion), wrong types,
 * out-of-range values, and settings that contradict each other (`checkConsistency`).
 *
 * Not here: presets' prose and task construction (see `presets.ts` and `src/tasks`).
 */
import { BOUND_KINDS } from '../core/confidence';
import * as v from 'valibot';
import { ConfigError } from '../core/errors';
import { describeValue } from '../core/schema';
import { TASK_NAMES, TASKS, type TaskName } from '../tasks/index';
import { LLM_TASK_NAMES, LLM_TASKS, type LlmTaskName } from '../tasks/llm/index';

/** Which part of the method a setting belongs to (groups the UI form and the docs). */
export type Group = 'task' | 'model' | 'run' | 'advantage' | 'objective' | 'trust' | 'order' | 'certificate' | 'swap';

interface Base {
  readonly doc: string;
  readonly group: Group;
  /** Means something for tabular games only (the form hides it for language tasks). */
  readonly tabularOnly?: true;
}
export interface IntField extends Base {
  readonly type: 'int';
  readonly default: number;
  readonly min: number;
  readonly max: number;
}
export interface FloatField extends Base {
  readonly type: 'float';
  readonly default: number;
  readonly min: number;
  readonly max: number;
  /** Shown on a log scale in the UI. */
  readonly log?: boolean;
}
export interface BoolField extends Base {
  readonly type: 'bool';
  readonly default: boolean;
}
export interface EnumField<O extends string = string> extends Base {
  readonly type: 'enum';
  readonly default: O;
  readonly options: readonly O[];
}
export interface ListField extends Base {
  readonly type: 'intList' | 'floatList';
  readonly default: readonly number[];
  /** Range of every element. */
  readonly min: number;
  readonly max: number;
  readonly maxLength: number;
}
/** A list of choices, one per agent (e.g. each agent's model size). */
export interface EnumListField extends Base {
  readonly type: 'enumList';
  readonly default: readonly string[];
  readonly options: readonly string[];
  readonly maxLength: number;
}
export type Field = IntField | FloatField | BoolField | EnumField | ListField | EnumListField;

// — the schema of each kind of value —

/** A setting's schema: it takes a typed value or text and outputs the setting's typed value. */
type Schema<T> = v.GenericSchema<unknown, T>;

/** Text a command line or URL spells a number with (no hex, no "1e", no blanks inside). */
const NUMBER_TEXT = /^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/; // one way to split a digit run: linear
/** A number, or text spelling one, as a number; undefined otherwise. */
function asNumber(x: unknown): number | undefined {
  if (typeof x === 'number') return x;
  return typeof x === 'string' && NUMBER_TEXT.test(x.trim()) ? Number(x) : undefined;
}
const BOOL_TEXT: Readonly<Record<string, boolean>> = { true: true, '1': true, false: false, '0': false };

/*
 * The loose schemas: each takes a typed value or the text a command line or URL gives (lists
 * comma-separated) and outputs the typed value. Each message is the middle of
 * `Setting "key" = <value> <message>; expected <describeAllowed>.`
 */

/** A number in [min, max]: an integer when `integer`. */
function numberSchema(integer: boolean, min: number, max: number) {
  return v.pipe(
    v.custom<unknown>((x) => asNumber(x) !== undefined, 'is not a number'),
    v.transform((x) => asNumber(x)!),
    v.check((x: number) => Number.isFinite(x), 'is not finite'),
    v.check((x) => !integer || Number.isInteger(x), 'is not an integer'),
    v.check((x) => x >= min && x <= max, 'is out of range'),
  );
}

function boolSchema() {
  return v.pipe(
    v.custom<unknown>((x) => typeof x === 'boolean' || (typeof x === 'string' && Object.hasOwn(BOOL_TEXT, x)), 'is not a boolean'),
    v.transform((x) => (typeof x === 'boolean' ? x : BOOL_TEXT[x as string]!)),
  );
}

function choiceSchema<const O extends string>(options: readonly O[]) {
  return v.picklist(options, 'is not an allowed choice');
}

/** A list: text split at commas, then every entry read, once, by the schema of one value. */
function listSchema<T>(entry: Schema<T>, maxLength: number) {
  return v.pipe(
    v.custom<unknown[] | string>((x) => Array.isArray(x) || typeof x === 'string', 'is not a list'),
    v.transform((x) => (Array.isArray(x) ? x : x.trim() === '' ? [] : x.split(',').map((e) => e.trim()))),
    v.check((a) => a.length <= maxLength, (i) => `has ${(i.input as unknown[]).length} entries`),
    v.array(
      v.pipe(
        v.unknown(),
        v.rawTransform(({ dataset, addIssue, NEVER }) => {
          const r = v.safeParse(entry, dataset.value);
          if (r.success) return r.output;
          addIssue({ message: `has an entry ${show(dataset.value)} that is not allowed` });
          return NEVER;
        }),
      ),
    ),
  );
}

/** What a link or a file holds for each type of setting (they are JSON: typed values, never text for a number). */
const JSON_TYPE: { readonly [T in Field['type']]: readonly [words: string, is: (x: unknown) => boolean] } = {
  int: ['a number', (x) => typeof x === 'number'],
  float: ['a number', (x) => typeof x === 'number'],
  bool: ['true or false', (x) => typeof x === 'boolean'],
  enum: ['a text', (x) => typeof x === 'string'],
  intList: ['a list of numbers', (x) => Array.isArray(x) && x.every((e) => typeof e === 'number')],
  floatList: ['a list of numbers', (x) => Array.isArray(x) && x.every((e) => typeof e === 'number')],
  enumList: ['a list of texts', (x) => Array.isArray(x) && x.every((e) => typeof e === 'string')],
};

/** What JSON type a value is, in words. */
function jsonTypeOf(x: unknown): string {
  if (Array.isArray(x)) return 'a list with other entries';
  return x === null ? 'null' : typeof x === 'string' ? 'a text' : typeof x === 'number' ? 'a number' : typeof x === 'boolean' ? 'true or false' : 'an object';
}

/**
 * A row of the table: the field, with the two schemas of its value built from it — loose (text or
 * typed: the command line, a URL, the form) and typed (only the field's JSON type, as a link or a
 * file holds it; a value of another type fails with "has the wrong type"). `Config` is inferred
 * from the loose schemas, so a setting's TypeScript type is whatever its schema outputs.
 */
type Row<F extends Field, T> = F & { readonly loose: Schema<T>; readonly typed: Schema<T> };

function row<F extends Field, T>(f: F, loose: Schema<T>): Row<F, T> {
  const [words, is] = JSON_TYPE[f.type];
  const typed = v.pipe(v.custom<unknown>(is, (i) => `has the wrong type: ${jsonTypeOf(i.input)}, not ${words}`), loose);
  return { ...f, loose, typed };
}

const int = (f: Omit<IntField, 'type'>) => row({ type: 'int', ...f } satisfies IntField, numberSchema(true, f.min, f.max));
const float = (f: Omit<FloatField, 'type'>) => row({ type: 'float', ...f } satisfies FloatField, numberSchema(false, f.min, f.max));
const bool = (f: Omit<BoolField, 'type'>) => row({ type: 'bool', ...f } satisfies BoolField, boolSchema());
const enumOf = <const O extends string>(f: Omit<EnumField<O>, 'type'>) => row({ type: 'enum', ...f } satisfies EnumField<O>, choiceSchema(f.options));
const intList = (f: Omit<ListField, 'type'>) => row({ type: 'intList', ...f } satisfies ListField, listSchema(numberSchema(true, f.min, f.max), f.maxLength));
const floatList = (f: Omit<ListField, 'type'>) => row({ type: 'floatList', ...f } satisfies ListField, listSchema(numberSchema(false, f.min, f.max), f.maxLength));
const enumList = (f: Omit<EnumListField, 'type'>) => row({ type: 'enumList', ...f } satisfies EnumListField, listSchema(choiceSchema(f.options), f.maxLength));

/** The task registries' names: tabular games, then language tasks. */
const TASK_OPTIONS: readonly (TaskName | LlmTaskName)[] = [...TASK_NAMES, ...LLM_TASK_NAMES];

/** True for the language-model tasks (agents are small transformers, not tables). */
export function isLlmTask(task: string): task is LlmTaskName {
  return (LLM_TASK_NAMES as readonly string[]).includes(task);
}

/** The table. Order here is the order of the UI form and of `--help`. */
export const CONFIG = {
  // — task and team —
  task: enumOf({
    group: 'task', default: 'climbing', options: TASK_OPTIONS,
    doc: `The team game. Tabular: ${TASK_NAMES.map((n) => `${n} — ${TASKS[n].title}`).join('; ')}. Language models: ${LLM_TASK_NAMES.map((n) => `${n} — ${LLM_TASKS[n].title}`).join('; ')}.`,
  }),
  protocol: enumOf({
    group: 'task', default: 'auto', options: ['auto', 'independent', 'chain', 'vote', 'router'],
    doc: "How agents share an episode (docs/method.md §2.2). 'auto' uses the task's own protocol (chain for language tasks); the guess and language tasks offer all four.",
  }),
  agents: int({ group: 'task', default: 3, min: 1, max: 6, doc: 'Number of agents n in the team (tabular games: 2–6; language tasks: 1–4, one turn marker each).' }),
  actions: int({ group: 'task', tabularOnly: true, default: 3, min: 2, max: 8, doc: 'Actions per agent m (fixed at 3 for the climbing and penalty games).' }),
  taskSeed: int({ group: 'task', default: 7, min: 0, max: 2 ** 31 - 1, doc: 'Seed that generates the task itself (random-matrix payoffs, guess answers); separate from the run seed.' }),
  penaltyK: float({ group: 'task', tabularOnly: true, default: -10, min: -100, max: 0, doc: 'Penalty game: the payoff k for mis-coordinating on the two optimal actions.' }),
  initScale: float({ group: 'task', tabularOnly: true, default: 0, min: 0, max: 5, doc: 'Std of the random initial logits of each agent table (0 = uniform policies).' }),

  // — language-model agents —
  level: int({ group: 'model', default: 3, min: 1, max: 4, doc: 'Difficulty of the language task: arithmetic 1–4, countdown 1–3 (the shipped models were pretrained at level 3).' }),
  model: enumOf({ group: 'model', default: 'S', options: ['S', 'M', 'L'], doc: 'Which shipped pretrained model every agent starts from: public/models/<task>-<size>.safetensors (L exists for arithmetic only).' }),
  backend: enumOf({ group: 'model', default: 'auto', options: ['auto', 'webgpu', 'cpu'], doc: 'Where each language agent runs, in its own Web Worker: auto = WebGPU when the browser has a hardware adapter (one GPUDevice per agent), else the CPU (a software adapter such as SwiftShader is slower than the CPU kernels); webgpu = WebGPU, any adapter, or an error; cpu = the CPU kernels (WebAssembly SIMD; TypeScript without SIMD). Tabular agents always run on the CPU. The command line runs the CPU backend for auto and cpu; webgpu there gives each agent its own device through Node\'s webgpu package (the machine\'s GPU driver, else Chromium\'s SwiftShader). Same backend + same seed ⇒ identical run.' }),
  agentModels: enumList({ group: 'model', default: [], options: ['S', 'M', 'L'], maxLength: 4, doc: 'Each agent’s own model size, one per agent (e.g. S,M,S: a larger model in the middle of the chain); empty = every agent uses model.' }),
  lora: int({ group: 'model', default: 0, min: 0, max: 64, doc: 'LoRA rank of each agent’s adapter over its frozen quantized base; 0 = train all weights (dequantized), fine for the small models.' }),
  activations: enumOf({
    group: 'model', default: 'exact', options: ['exact', 'int8'],
    doc: "How the LoRA agents' frozen Q8/Q4 base takes its input: exact = f32 activations (the same numbers as the dequantized model); int8 = activations quantized per block of 32 and integer dot products, about twice as fast to decode on the CPU but not the same numbers (docs/kernels.md \"int8 activations\"). Every forward of an agent (sampling, log-probs, KL, training) uses it, so each policy is one function. Needs lora ≥ 1 and the CPU backend (backend = auto then runs the agents on the CPU); a swapped-in shipped model trains all its weights in f32 and takes f32 activations.",
  }),
  loraAlpha: float({ group: 'model', default: 16, min: 0.01, max: 1024, doc: 'LoRA α: the adapter’s update is scaled by α/rank.' }),
  temperature: float({ group: 'model', default: 1, min: 0.05, max: 5, doc: 'Sampling temperature τ; every log-prob, ratio and KL uses the same τ, so r = 1 exactly before the first step.' }),
  topK: int({ group: 'model', default: 0, min: 0, max: 64, doc: 'Sample from the k most likely tokens only (0 = all). Every log-prob a ratio is built from is that of the distribution the sampler draws from (top-k truncated and renormalised), so the certificate stays a bound (docs/certificate.md §3.1); the trust region\u2019s KL is the full softmax\u2019s.' }),
  maxNew: int({ group: 'model', default: 6, min: 1, max: 32, doc: 'Most tokens per message, the end-of-message token included.' }),
  evalEpisodes: int({ group: 'model', default: 128, min: 8, max: 4096, doc: 'Held-out problems behind each estimate of the team’s J (one sampled episode each, fixed seed).' }),
  formatReward: float({ group: 'model', default: 0, min: 0, max: 0.99, doc: 'Reward for a well-formed but wrong answer (0 = only correct answers score).' }),
  rewardMode: enumOf({
    group: 'model', default: 'strict', options: ['strict', 'extract'],
    doc: "Which part of a real model's reply the exported reward.py grades (docs/real-run.md §2). strict = the whole message, as the playground's own verifier grades it (its J always does). extract = the last \\boxed{…}, else the text after the last ####, else the last number (countdown: the last line), for instruct models that answer in words.",
  }),

  // — the run —
  seed: int({ group: 'run', default: 1, min: 0, max: 4294967295, doc: 'Run seed: fixes every sampled episode, order and probe. Same seed + same config + same backend ⇒ identical run.' }),
  stages: int({ group: 'run', default: 30, min: 1, max: 10000, doc: 'Number of stages (each updates every agent once).' }),
  scheme: enumOf({
    group: 'run', default: 'sequential', options: ['sequential', 'simultaneous'],
    doc: "sequential = SAT (one agent at a time, docs/method.md §3). simultaneous = the joint-update baseline: every agent from the same stage batch and advantages at once (the estimator setting does not apply).",
  }),
  batch: int({ group: 'run', default: 8, min: 1, max: 4096, doc: 'B: prompts per stage batch.' }),
  group: int({ group: 'run', default: 8, min: 2, max: 256, doc: 'G: samples per prompt (the GRPO group).' }),

  // — advantages (docs/method.md §4) —
  estimator: enumOf({
    group: 'advantage', default: 'resample', options: ['resample', 'truncated-is', 'happo', 'naive'],
    doc: 'How agent σ(i) gets advantages under the intermediate team π̂ⁱ⁻¹: resample = fresh episodes (exact theory, zero bias); truncated-is = reuse the batch with per-episode weight Π min(1, ρ_t); happo = reuse with the product of predecessors\u2019 ratios; naive = reuse the stage advantages.',
  }),
  norm: enumOf({
    group: 'advantage', default: 'group', options: ['group', 'batch', 'none'],
    doc: 'Advantage normalisation: group = (R − group mean)/(group std + 1e-8); batch = group mean, std over the whole batch; none = R − group mean (Dr.GRPO).',
  }),
  aClip: float({ group: 'advantage', default: 5, min: 0.1, max: 100, doc: 'A_clip: normalised advantages are clipped to [−A_clip, A_clip].' }),
  probeEpisodes: int({ group: 'advantage', default: 64, min: 1, max: 100000, doc: 'Episodes of the fresh on-policy probe that measures the bias ζ of reuse estimators.' }),

  // — objective (docs/method.md §5) —
  objective: enumOf({ group: 'objective', default: 'sequence', options: ['sequence', 'token'], doc: 'sequence = one ratio per episode over all of the agent\u2019s steps (SAT); token = per-step ratios (GRPO/DAPO style), for comparison.' }),
  tokenAgg: enumOf({ group: 'objective', default: 'grpo', options: ['grpo', 'bnpo', 'dr_grpo'], doc: 'Aggregation of the token-level variant: grpo = mean per episode then over episodes; bnpo = over all steps; dr_grpo = sum over steps / (episodes × horizon).' }),
  epsLow: float({ group: 'objective', default: 0.2, min: 0.001, max: 0.99, doc: 'ε_low: the ratio is clipped below at 1 − ε_low.' }),
  epsHigh: float({ group: 'objective', default: 0.2, min: 0.001, max: 10, doc: 'ε_high: the ratio is clipped above at 1 + ε_high.' }),
  beta: float({ group: 'objective', default: 0.1, min: 0, max: 10000, log: true, doc: 'β: weight of the exact per-state KL penalty E_s KL(π_θ‖π_cur) (initial value when adaptive).' }),
  betaAdapt: bool({ group: 'objective', default: true, doc: 'Adaptive β: ×1.5 after a backtrack, ÷1.5 when the KL quantile ends below δ/1.5; carried to the next stage.' }),
  lr: float({ group: 'objective', default: 0.1, min: 1e-5, max: 10, log: true, doc: 'Learning rate of the agent optimizer (Adam).' }),
  epochs: int({ group: 'objective', default: 4, min: 1, max: 100, doc: 'Optimizer steps per agent update (each followed by the trust-region check).' }),
  weightDecay: float({ group: 'objective', default: 0, min: 0, max: 1, doc: 'Decoupled weight decay (AdamW) on the agent parameters.' }),

  // — trust region (docs/method.md §6) —
  delta: float({ group: 'trust', default: 0.02, min: 1e-6, max: 10, log: true, doc: 'δ: per-state KL radius of every agent (unless deltas sets them one by one).' }),
  deltas: floatList({ group: 'trust', default: [], min: 1e-6, max: 10, maxLength: 6, doc: 'Per-agent radii δ_i, one per agent; empty = every agent uses δ.' }),
  alpha: float({ group: 'trust', default: 0.05, min: 0, max: 0.5, doc: 'α: the monitor checks the (1−α)-quantile of the per-state KL against δ.' }),
  maxBacktracks: int({ group: 'trust', default: 5, min: 0, max: 20, doc: 'Tries per optimizer step: a violating step is undone (parameters and optimizer state) and retried with β×1.5.' }),
  retryLrFactor: float({ group: 'trust', default: 1, min: 0.01, max: 1, doc: 'Learning-rate factor of each retry after a backtrack: 1 = retry the same step with a larger β only (docs/method.md §6.2); 0.5 = also halve the step, which Adam needs (its step size hardly depends on β).' }),
  onExhausted: enumOf({ group: 'trust', default: 'reject', options: ['reject', 'keep', 'shrink'], doc: 'When tries run out: reject = the agent keeps π_cur this stage (HATRPO); keep = keep the violating step (the released code); shrink = halve the step until inside the radius.' }),

  // — update order (docs/method.md §3.1) —
  order: enumOf({ group: 'order', default: 'fixed', options: ['fixed', 'random', 'reverse', 'custom', 'greedy'], doc: 'Update order σ: fixed 0..n−1, random per stage, reverse, custom (customOrder), greedy = by the predicted first-order gain κ√δ at the stage start, largest first.' }),
  customOrder: intList({ group: 'order', default: [], min: 0, max: 5, maxLength: 6, doc: 'σ for order=custom: a permutation of 0..n−1, e.g. 2,0,1.' }),

  // — certificate (docs/method.md §7, docs/certificate.md) —
  certForm: enumOf({ group: 'certificate', default: 'episodic', options: ['episodic', 'gamma'], doc: "Which form decides cert/lower: episodic = our certificate, a fresh-batch importance-sampling bound with no shift or bias term (docs/certificate.md); gamma = the paper's discounted form (vacuous at γ=0.99). Both are always reported." }),
  gamma: float({ group: 'certificate', default: 0.99, min: 0, max: 0.9999, doc: 'γ of the paper\u2019s discounted certificate form.' }),
  deltaConf: float({ group: 'certificate', default: 0.05, min: 1e-6, max: 0.5, log: true, doc: 'δ_conf: the certificate holds with probability ≥ 1 − δ_conf.' }),
  certEpisodes: int({ group: 'certificate', default: 0, min: 0, max: 1000000, doc: 'Size of the certification batch, drawn under π_cur at the stage start and never seen by any update (docs/certificate.md §5.1): language teams draw n times this many episodes (256 per agent, 768 a stage for three), tabular games this many exact draws; with the per-agent form each agent step draws this many under π̂ⁱ⁻¹ (§4). More episodes, a tighter bound. 0 = auto: 16,384 on tabular games (cheap), 256 for language teams.' }),
  certRounds: int({ group: 'certificate', default: 4, min: 1, max: 64, doc: 'The team-level certificate draws its episodes in rounds of (the stage\u2019s average budget) / certRounds and reads its bound after each: the bound is a confidence sequence, valid whenever drawing stops (docs/certificate.md §5.3). 1 with certCap 1 = one batch and the fixed-size bound.' }),
  certCap: float({ group: 'certificate', default: 4, min: 1, max: 64, doc: 'Most certification episodes one stage may draw, as a multiple of the average budget (n × certEpisodes for language teams, certEpisodes on tabular games). Stages that certify early, or stop because they cannot, leave episodes to later ones; the run never draws more than the average budget times the stages so far (docs/certificate.md §5.3).' }),
  certStop: enumOf({ group: 'certificate', default: 'early', options: ['early', 'cap'], doc: 'early = stop a stage\u2019s certification as soon as its bound is above 0, or when it can no longer get there within its budget; cap = draw every round the budget allows (for studies: the bound is the same confidence sequence, read at the end).' }),
  certBound: enumOf({ group: 'certificate', default: 'betting', options: BOUND_KINDS, doc: 'The one-sided confidence bound behind the finite-sample term: betting (Waudby-Smith & Ramdas 2023, variance-adaptive, tightest), bernstein (empirical Bernstein, Maurer & Pontil 2009), hoeffding (worst-case range, the control).' }),
  certClip: float({ group: 'certificate', default: 10, min: 1, max: 1e6, log: true, doc: 'c: the importance ratio is truncated at c in the certificate\u2019s estimator of language agents, whose ratios have no known bound (tabular agents need none: the exact range of every trajectory\u2019s ratio is known). Truncation only lowers the estimate; the betting bound needs only the summand\u2019s lower end (docs/certificate.md §5.2), so a larger c costs no width, only the variance of the rare large ratios; Bernstein and Hoeffding use the whole range [−A, (c − 1)·A] and want a small c (docs/certificate.md §4).' }),
  geoIters: int({ group: 'certificate', default: 50, min: 0, max: 200, doc: 'Fisher-vector products (conjugate gradient, and up to 20 Lanczos steps) behind the information-geometric gain κ√δ̄ − aδ̄; 0 = skip it (and greedy order, which needs κ).' }),
  aMax: float({ group: 'certificate', default: 0, min: 0, max: 1e6, doc: 'A_max: bound on |advantage| in reward units; 0 = the task\u2019s reward range R_max − R_min.' }),

  // — plug-and-play (docs/method.md §8) —
  swapAgent: int({ group: 'swap', default: -1, min: -1, max: 5, doc: 'Plug-and-play: the agent whose seat gets a different policy before stage swapAt (−1 = no swap). Tabular games swap in the best response to the team; language teams swap in the shipped model of size swapTo.' }),
  swapAt: int({ group: 'swap', default: 1, min: 1, max: 10000, doc: 'The swap happens just before this stage starts.' }),
  swapTo: enumOf({ group: 'swap', default: 'best', options: ['best', 'S', 'M', 'L', 'onnx'], doc: 'What is swapped in: best = the best response to the current team (tabular games); S / M / L = the shipped model <task>-<size> (language teams); onnx = the ONNX folder given with the command line\'s --swap J=DIR, with the seat\'s own tokenizer (the page cannot take one yet).' }),
  swapStage0: bool({ group: 'swap', default: true, doc: 'Project the incoming policy into the δ_0 ball around the agent it replaces, per state (Stage-0, docs/method.md §8.1); off = seat it as it is.' }),
  stage0Delta: float({ group: 'swap', default: 0.01, min: 1e-6, max: 10, log: true, doc: 'δ_0: Stage-0 projects a swapped-in agent to within this KL of the agent it replaces, per state.' }),
} as const satisfies Record<string, Field>;

export type ConfigKey = keyof typeof CONFIG;

/** The schema of a whole config, one entry per row: each setting's loose schema. */
export const CONFIG_SCHEMA = v.object(Object.fromEntries(Object.entries(CONFIG).map(([k, f]) => [k, f.loose])) as { readonly [K in ConfigKey]: (typeof CONFIG)[K]['loose'] });
/** A complete, checked configuration: what the table's schemas output. */
export type Config = v.InferOutput<typeof CONFIG_SCHEMA>;

export const CONFIG_KEYS = Object.keys(CONFIG) as ConfigKey[];

/** The settings marked tabularOnly in the table. */
export const TABULAR_ONLY_KEYS: readonly ConfigKey[] = CONFIG_KEYS.filter((k) => CONFIG[k].tabularOnly === true);

/** A config with every value from `get`, lists copied (no two configs share a list). */
function configOf(get: (k: ConfigKey) => unknown): Config {
  return Object.fromEntries(CONFIG_KEYS.map((k) => { const x = get(k); return [k, Array.isArray(x) ? [...x] : x]; })) as Config;
}

export function defaultConfig(): Config {
  return configOf((k) => CONFIG[k].default);
}

/** A copy of `c` that shares no list with it. */
export function copyConfig(c: Config): Config {
  return configOf((k) => c[k]);
}

/** A number as people write it in a range: 1e-6 rather than 0.000001. */
function nice(x: number): string {
  return x !== 0 && Math.abs(x) < 1e-3 ? x.toExponential() : String(x);
}

/** The allowed range of a field, in words, for messages and tooltips. */
export function describeAllowed(f: Field): string {
  switch (f.type) {
    case 'int':
      return `an integer in [${nice(f.min)}, ${nice(f.max)}]`;
    case 'float':
      return `a number in [${nice(f.min)}, ${nice(f.max)}]`;
    case 'bool':
      return 'true or false';
    case 'enum':
      return `one of ${f.options.join(', ')}`;
    case 'intList':
    case 'floatList':
      return `a comma-separated list of at most ${f.maxLength} ${f.type === 'intList' ? 'integers' : 'numbers'} in [${nice(f.min)}, ${nice(f.max)}]`;
    case 'enumList':
      return `a comma-separated list of at most ${f.maxLength} of ${f.options.join(', ')}`;
  }
}

/** A value as a message quotes it: texts in quotes and cut short, lists' first entries, an object described. */
function show(v: unknown, depth = 0): string {
  if (typeof v === 'string') return depth > 0 ? v.slice(0, 60) : JSON.stringify(v.length > 60 ? v.slice(0, 60) + '…' : v);
  if (Array.isArray(v)) return depth >= 3 ? '(a value nested too deeply to show)' : `[${v.slice(0, 8).map((x) => show(x, depth + 1)).join(', ')}${v.length > 8 ? ', …' : ''}]`;
  return v !== null && typeof v === 'object' ? describeValue(v) : String(v);
}

/** Edit distance counting a swap of neighbours as one edit (optimal string alignment), for "did you mean" suggestions on unknown keys. */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++)
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1), i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1] ? d[i - 2]![j - 2]! + 1 : Infinity);
  return d[a.length]![b.length]!;
}

export function isConfigKey(key: string): key is ConfigKey {
  return Object.prototype.hasOwnProperty.call(CONFIG, key);
}

/** The error of a key that is no setting, with the nearest one when it is close ("did you mean"). */
export function unknownSetting(key: string, value: unknown): ConfigError {
  const best = CONFIG_KEYS.map((k) => [k, editDistance(key.toLowerCase(), k.toLowerCase())] as const).sort((a, b) => a[1] - b[1])[0];
  const hint = best && best[1] <= 3 ? ` Did you mean "${best[0]}"?` : '';
  return new ConfigError(key, value, `Unknown setting "${key.slice(0, 60)}".${hint} Known settings: ${CONFIG_KEYS.join(', ')}.`);
}

/** A value whose JSON type is not its setting's (a link's "lr": "0.1"); `typed` reads tell it from a value out of range. */
export class SettingTypeError extends ConfigError {
  constructor(key: string, value: unknown, message: string) {
    super(key, value, message);
    this.name = 'SettingTypeError';
  }
}

/**
 * One raw value as its setting's typed value, checked against the setting's schema. Loose (the
 * default) also reads text (CLI, URL, "0.1,0.2" for a list); typed takes only the setting's JSON
 * type, as a link holds it, and a value of another type is a SettingTypeError.
 */
export function coerceValue(key: ConfigKey, raw: unknown, mode: 'loose' | 'typed' = 'loose'): Config[ConfigKey] {
  const schema: Schema<Config[ConfigKey]> = CONFIG[key][mode];
  const r = v.safeParse(schema, raw, { abortEarly: true });
  if (r.success) return r.output;
  const why = r.issues[0].message;
  const message = `Setting "${key}" = ${show(raw)} ${why}; expected ${describeAllowed(CONFIG[key])}.`;
  throw why.startsWith('has the wrong type') ? new SettingTypeError(key, raw, message) : new ConfigError(key, raw, message);
}

/** Cross-field checks: settings that are each valid but contradict each other. */
export function checkConsistency(c: Config): void {
  const n = c.agents;
  if (isLlmTask(c.task)) {
    checkLlmConsistency(c);
  } else {
    checkTabularConsistency(c);
  }
  checkTeamSettings(c, n);
}

function checkLlmConsistency(c: Config): void {
  if (c.activations === 'int8' && c.lora === 0) {
    throw new ConfigError('activations', c.activations, 'Setting "activations" = "int8" applies to the frozen Q8/Q4 base of LoRA agents, but "lora" = 0 trains every weight in f32; set lora ≥ 1 or activations = exact.');
  }
  if (c.activations === 'int8' && c.backend === 'webgpu') {
    throw new ConfigError('activations', c.activations, 'Setting "activations" = "int8" runs on the CPU backend\u2019s WebAssembly kernels only; with backend = webgpu, use activations = exact (or backend = cpu).');
  }
  const info = LLM_TASKS[c.task as LlmTaskName];
  if (c.agents > 4) {
    throw new ConfigError('agents', c.agents, `Setting "agents" = ${c.agents} is too many for task "${c.task}": language teams have at most 4 agents (one turn marker each).`);
  }
  if (c.level > info.maxLevel) {
    throw new ConfigError('level', c.level, `Setting "level" = ${c.level} is out of range for task "${c.task}"; allowed: an integer in [1, ${info.maxLevel}].`);
  }
  if (c.protocol === 'router' && c.agents < 2) {
    throw new ConfigError('protocol', c.protocol, `Setting "protocol" = "router" needs at least 2 agents (a router and a solver); "agents" = ${c.agents}.`);
  }
  if (c.model === 'L' && c.task !== 'arithmetic') {
    throw new ConfigError('model', c.model, `Setting "model" = "L" is not shipped for task "${c.task}"; allowed: S, M (L exists for arithmetic).`);
  }
  if (c.agentModels.length > 0 && c.agentModels.length !== c.agents) {
    throw new ConfigError('agentModels', c.agentModels, `Setting "agentModels" = [${c.agentModels.join(', ')}] has ${c.agentModels.length} entries but the team has ${c.agents} agents; give one size per agent or leave it empty.`);
  }
  if (c.agentModels.includes('L') && c.task !== 'arithmetic') {
    throw new ConfigError('agentModels', c.agentModels, `Setting "agentModels" = [${c.agentModels.join(', ')}] names L, which is not shipped for task "${c.task}"; allowed: S, M.`);
  }
}

function checkTabularConsistency(c: Config): void {
  if (c.agents < 2) {
    throw new ConfigError('agents', c.agents, `Setting "agents" = ${c.agents} is too few for task "${c.task}"; tabular games need an integer in [2, 6].`);
  }
  if (c.agentModels.length > 0) {
    throw new ConfigError('agentModels', c.agentModels, `Setting "agentModels" = [${c.agentModels.join(', ')}] is for language teams; the agents of "${c.task}" are tables (leave it empty).`);
  }
  const task = TASKS[c.task as TaskName];
  const fixed = task.fixedActions;
  if (fixed !== undefined && c.actions !== fixed) {
    throw new ConfigError('actions', c.actions, `Setting "actions" = ${c.actions} is inconsistent with task "${c.task}", which has exactly ${fixed} actions.`);
  }
  const protocols: readonly string[] = task.protocols;
  if (c.protocol !== 'auto' && !protocols.includes(c.protocol)) {
    throw new ConfigError('protocol', c.protocol, `Setting "protocol" = "${c.protocol}" is not available for task "${c.task}"; allowed: auto, ${protocols.join(', ')}.`);
  }
}

/** Settings about the team that every task shares: per-agent radii and the custom order. */
function checkTeamSettings(c: Config, n: number): void {
  if (c.deltas.length > 0 && c.deltas.length !== n) {
    throw new ConfigError('deltas', c.deltas, `Setting "deltas" = [${c.deltas.join(', ')}] has ${c.deltas.length} entries but the team has ${n} agents; give one radius per agent or leave it empty.`);
  }
  if (c.order === 'greedy' && c.geoIters === 0) {
    throw new ConfigError('geoIters', c.geoIters, 'Setting "geoIters" = 0 is inconsistent with order = greedy, which ranks agents by κ (needs geoIters ≥ 1).');
  }
  if (c.order === 'custom') {
    const sorted = [...c.customOrder].sort((a, b) => a - b);
    if (sorted.length !== n || sorted.some((v, i) => v !== i)) {
      throw new ConfigError('customOrder', c.customOrder, `Setting "customOrder" = [${c.customOrder.join(', ')}] is not a permutation of 0..${n - 1} (order = custom needs each agent exactly once).`);
    }
  } else if (c.customOrder.length > 0 && c.customOrder.some((v) => v >= n)) {
    throw new ConfigError('customOrder', c.customOrder, `Setting "customOrder" = [${c.customOrder.join(', ')}] names an agent ≥ ${n}; the team has agents 0..${n - 1}.`);
  }
  checkSwap(c, n);
}

/** The plug-and-play swap: a real agent, a stage that will run, something to swap in that exists. */
function checkSwap(c: Config, n: number): void {
  if (c.swapAgent < 0) return;
  if (c.swapAgent >= n) throw new ConfigError('swapAgent', c.swapAgent, `Setting "swapAgent" = ${c.swapAgent} names no agent: the team has agents 0..${n - 1} (−1 = no swap).`);
  if (c.swapAt > c.stages) throw new ConfigError('swapAt', c.swapAt, `Setting "swapAt" = ${c.swapAt} is after the last stage (stages = ${c.stages}); the swap would never happen.`);
  if (isLlmTask(c.task)) {
    if (c.swapTo === 'best') throw new ConfigError('swapTo', c.swapTo, `Setting "swapTo" = "best" is for tabular games; a language team swaps in a shipped model: S, M${c.task === 'arithmetic' ? ' or L' : ''}.`);
    if (c.swapTo === 'L' && c.task !== 'arithmetic') throw new ConfigError('swapTo', c.swapTo, `Setting "swapTo" = "L" is not shipped for task "${c.task}"; allowed: S, M.`);
  } else if (c.swapTo !== 'best') {
    throw new ConfigError('swapTo', c.swapTo, `Setting "swapTo" = "${c.swapTo}" names a language model, but "${c.task}" is a tabular game; tabular swaps use swapTo = best.`);
  }
}

/**
 * Builds a checked Config from `input` on top of `base` (defaults unless given).
 * Every key of `input` must be known; values may be strings (CLI, URL) or typed.
 */
export function parseConfig(input: Readonly<Record<string, unknown>>, base: Config = defaultConfig()): Config {
  const out = copyConfig(base) as Record<string, unknown>;
  for (const [key, raw] of Object.entries(input)) {
    if (!isConfigKey(key)) throw unknownSetting(key, raw);
    out[key] = coerceValue(key, raw);
  }
  const c = out as Config;
  checkConsistency(c);
  return c;
}

/** Parses `key=value` (the CLI's --set). */
export function parseAssignment(s: string): [string, string] {
  const i = s.indexOf('=');
  if (i <= 0) throw new ConfigError(s, s, `Expected key=value, got ${show(s)}.`);
  return [s.slice(0, i).trim(), s.slice(i + 1).trim()];
}

/** The protocol a config runs: its own, or the task's default for 'auto'. */
export function resolvedProtocol(c: Config) {
  if (c.protocol !== 'auto') return c.protocol;
  return isLlmTask(c.task) ? 'chain' : TASKS[c.task as TaskName].defaultProtocol;
}

/** Certification episodes per agent step: `certEpisodes`, or for 0 (auto) 16,384 on tabular games and 256 for language teams. */
export function certEpisodesOf(c: Config): number {
  return c.certEpisodes > 0 ? c.certEpisodes : isLlmTask(c.task) ? 256 : 16384;
}

/** The radius δ_i of agent i. */
export function agentDelta(c: Config, i: number): number {
  return c.deltas.length > 0 ? c.deltas[i]! : c.delta;
}

/** The shipped model agent i of a language team starts from, e.g. "arithmetic-M". */
export function agentModelName(c: Config, i: number): string {
  return `${c.task}-${c.agentModels.length > 0 ? c.agentModels[i]! : c.model}`;
}

/** The settings of `c` that differ from `base` (the defaults unless given), lists copied: compact share links, readable JSON. */
export function diffConfig(c: Config, base: Config = defaultConfig()): Partial<Config> {
  const out: Record<string, unknown> = {};
  for (const k of CONFIG_KEYS) if (JSON.stringify(c[k]) !== JSON.stringify(base[k])) out[k] = Array.isArray(c[k]) ? [...(c[k] as unknown[])] : c[k];
  return out as Partial<Config>;
}
