/**
 * "Export for a real run": the playground's settings as (a) a config in the SAT authors' style
 * (YAML, keys `algorithm.kl_ctrl.*`, `sat.*`, `certificate.*`) and (b) a list of verl-style Hydra
 * overrides (`key=value`, e.g. `actor_rollout_ref.actor.clip_ratio_low=0.2`), so a user who
 * outgrows the browser can take an experiment to real 0.1–8B models. And back: a YAML of that shape
 * imported into the playground reproduces the settings it maps (`readRecipe`).
 *
 * `RECIPE` maps EVERY playground setting (the config table, src/sat/config.ts): to a key of the
 * SAT-style config, of the verl overrides, of both, or to neither — then with a sentence saying why
 * (the playground's own toy tasks, its certificate diagnostics, its CPU/WebGPU backends…). The
 * mapping is by meaning, not by name; where the two sides differ (an exact per-state KL against
 * verl's sampled estimators, a sequence-level ratio verl does not have) the note says so.
 * docs/real-run.md is generated from this table (`recipeTable`), and tests/recipe.test.ts checks
 * that it is total, that the YAML parses back to the same values, and that an import round-trips.
 *
 * Model names: the zoo's sizes S / M / L map to user-chosen Hugging Face ids (`ModelMap`;
 * defaults are SmolLM2 checkpoints of the Llama family, a guess the user should replace).
 *
 * Not here: the settings themselves (config.ts), the file dialogs (the page, the CLI).
 */
import { parse, stringify } from 'yaml';
import { ConfigError, FormatError } from '../core/errors';
import { CONFIG_KEYS, type Config, type ConfigKey, isLlmTask, parseConfig } from './config';

/** The zoo's sizes → Hugging Face model ids for the real run. */
export type ModelMap = Readonly<Record<'S' | 'M' | 'L', string>>;

/** Small Llama-family checkpoints by size: placeholders the user should choose for their task. */
export const DEFAULT_MODELS: ModelMap = {
  S: 'HuggingFaceTB/SmolLM2-135M-Instruct',
  M: 'HuggingFaceTB/SmolLM2-360M-Instruct',
  L: 'HuggingFaceTB/SmolLM2-1.7B-Instruct',
};

/** Where one playground setting goes. */
export interface RecipeEntry {
  /** Path in the SAT-style YAML (dots = nesting), or null: no counterpart there. */
  readonly sat: string | null;
  /** verl override key, or null: no counterpart there. */
  readonly verl: string | null;
  /** How the value reads on the other side, when not as it is. */
  readonly note?: string;
}

const NONE = (note: string): RecipeEntry => ({ sat: null, verl: null, note });

/** Every setting of the config table, by meaning (header). */
export const RECIPE: Readonly<Record<ConfigKey, RecipeEntry>> = {
  task: NONE('The task is the dataset: a real run reads its prompts and reward function from data files (verl data.train_files, custom_reward_function.path).'),
  protocol: { sat: 'sat.protocol', verl: null, note: 'How agents share an episode; verl trains one policy, so there is no counterpart.' },
  agents: { sat: 'sat.agents', verl: null, note: 'The number of entries of sat.agents (one {name, path} each).' },
  actions: NONE('A tabular game\'s action count; a language model\'s actions are its vocabulary.'),
  taskSeed: NONE('Seeds the playground\'s generated tasks; a real run\'s data is a file.'),
  penaltyK: NONE('A payoff of the penalty matrix game (tabular only).'),
  initScale: NONE('Random initial logits of tabular agents; real agents start from their checkpoints.'),
  level: NONE('Difficulty of the playground\'s generated tasks; choose the data instead.'),
  model: { sat: 'sat.agents[*].path', verl: 'actor_rollout_ref.model.path', note: 'Each agent\'s checkpoint: the size S/M/L mapped to a Hugging Face id. verl trains one policy: agent 0\'s.' },
  backend: NONE('Where the playground computes (CPU kernels, WebGPU); a real run uses its cluster.'),
  agentModels: { sat: 'sat.agents[*].path', verl: null, note: 'Per-agent sizes, mapped like model.' },
  lora: NONE('LoRA rank of the playground\'s adapters; verl versions with LoRA support take it as actor_rollout_ref.model.lora_rank (not in every version, so not written).'),
  loraAlpha: NONE('LoRA α; see lora.'),
  temperature: { sat: null, verl: 'actor_rollout_ref.rollout.temperature' },
  topK: { sat: null, verl: 'actor_rollout_ref.rollout.top_k', note: '0 (all tokens) is written as -1, vLLM\'s "off".' },
  maxNew: { sat: null, verl: 'data.max_response_length', note: 'Tokens per message, end token included; a real response length is usually far longer.' },
  evalEpisodes: NONE('Held-out problems behind each J estimate; a real run evaluates on data.val_files every trainer.test_freq steps.'),
  formatReward: NONE('A shaping bonus of the playground\'s verifiers; put it in the reward function.'),
  seed: NONE('The playground\'s one seed fixes a run; a real run has several (data shuffling, sampling) with their own keys.'),
  stages: { sat: null, verl: 'trainer.total_training_steps', note: 'One SAT stage per training step.' },
  scheme: NONE('sequential is SAT itself; simultaneous (every agent from the same batch) is what a plain multi-policy GRPO run does.'),
  batch: { sat: null, verl: 'data.train_batch_size', note: 'Prompts per stage (groups).' },
  group: { sat: 'sat.group_size', verl: 'actor_rollout_ref.rollout.n', note: 'Samples per prompt (GRPO group size).' },
  estimator: { sat: 'sat.adv_mode', verl: null, note: 'How agent j\'s advantages account for its predecessors\' updates (docs/method.md §4.2).' },
  norm: { sat: null, verl: 'algorithm.norm_adv_by_std_in_grpo', note: 'group → true, none → false; batch normalisation has no verl counterpart (written as true).' },
  aClip: { sat: 'sat.A_clip', verl: null },
  probeEpisodes: NONE('A diagnostic of the playground\'s certificate (the bias probe).'),
  objective: { sat: null, verl: 'actor_rollout_ref.actor.loss_agg_mode', note: 'token → a token-level loss aggregated as tokenAgg says; sequence (one ratio per message, docs/method.md §5.1) has no verl counterpart and is written as seq-mean-token-mean.' },
  tokenAgg: { sat: null, verl: 'actor_rollout_ref.actor.loss_agg_mode', note: 'grpo → seq-mean-token-mean, bnpo → token-mean, dr_grpo → seq-mean-token-sum.' },
  epsLow: { sat: 'sat.epsilon', verl: 'actor_rollout_ref.actor.clip_ratio_low', note: 'sat.epsilon is one symmetric ε: the playground writes epsLow there (and epsHigh to verl\'s clip_ratio_high).' },
  epsHigh: { sat: null, verl: 'actor_rollout_ref.actor.clip_ratio_high' },
  beta: { sat: 'algorithm.kl_ctrl.kl_coef', verl: 'actor_rollout_ref.actor.kl_loss_coef', note: 'With use_kl_loss=true. Ours is the exact per-state KL to π_cur over the full vocabulary; verl estimates a KL to its reference from sampled tokens (kl_loss_type, low_var_kl by default).' },
  betaAdapt: NONE('The playground\'s adaptive β (×1.5 after a backtrack, ÷1.5 when well inside); verl\'s kl_ctrl.type adaptive controls an in-reward penalty instead.'),
  lr: { sat: null, verl: 'actor_rollout_ref.actor.optim.lr', note: 'AdamW rate; real models need far smaller ones (1e-6 is verl\'s default).' },
  epochs: { sat: null, verl: 'actor_rollout_ref.actor.ppo_epochs' },
  weightDecay: { sat: null, verl: 'actor_rollout_ref.actor.optim.weight_decay' },
  delta: { sat: 'algorithm.kl_ctrl.target_kl', verl: null, note: 'The trust radius δ of every agent; verl has no trust-region monitor (its target_kl steers an in-reward penalty).' },
  deltas: { sat: 'sat.agents[*].delta', verl: null, note: 'Per-agent radii, beside each agent\'s entry.' },
  alpha: { sat: 'algorithm.kl_ctrl.quantile', verl: null, note: 'Written as the quantile 1 − α the monitor checks.' },
  maxBacktracks: { sat: 'sat.max_backtracks', verl: null },
  retryLrFactor: NONE('How a retry shrinks the step; the SAT-style config has no key for it.'),
  onExhausted: NONE('What happens when the retries run out (reject / keep / shrink); the SAT-style config has no key for it.'),
  order: { sat: 'sat.scheduler.mode', verl: null, note: 'The update order σ.' },
  customOrder: { sat: 'sat.scheduler.order', verl: null, note: 'Only with order = custom.' },
  certForm: NONE('Which of the playground\'s certificate forms its charts show.'),
  gamma: NONE('The paper\'s discount, used only by the γ-form certificate (a control in the playground).'),
  deltaConf: { sat: 'certificate.delta_conf', verl: null },
  certEpisodes: NONE('The playground\'s fresh certification batch (docs/certificate.md); the SAT-style config has no key for it.'),
  certBound: NONE('Which concentration bound the playground\'s certificate uses.'),
  certClip: NONE('The ratio truncation of the playground\'s language certificate.'),
  geoIters: NONE('Fisher-vector products of the playground\'s information-geometric gain (a diagnostic).'),
  aMax: { sat: 'certificate.A_max', verl: null, note: '0 means the task\'s reward range; written as that range.' },
  swapAgent: { sat: 'sat.agents[*].upgrade', verl: null, note: 'The swapped agent\'s entry gets upgrade: the Hugging Face id of swapTo.' },
  swapAt: NONE('When the swap happens; the SAT-style config names the upgrade per agent, not its stage.'),
  swapTo: { sat: 'sat.agents[*].upgrade', verl: null, note: 'Mapped like model (best, a tabular best response, has no counterpart).' },
  swapStage0: { sat: 'sat.stage0_delta', verl: null, note: 'Off is written as stage0_delta: 0.' },
  stage0Delta: { sat: 'sat.stage0_delta', verl: null },
};

/** The exported recipe: the SAT-style config object (YAML text beside it) and the verl overrides. */
export interface Recipe {
  readonly sat: Record<string, unknown>;
  readonly yaml: string;
  readonly verl: readonly string[];
  /** Settings with no counterpart on either side (said plainly in docs/real-run.md). */
  readonly unmapped: readonly ConfigKey[];
}

const AGG = { grpo: 'seq-mean-token-mean', bnpo: 'token-mean', dr_grpo: 'seq-mean-token-sum' } as const;

function modelOf(cfg: Config, i: number): 'S' | 'M' | 'L' {
  return (cfg.agentModels.length > 0 ? cfg.agentModels[i]! : cfg.model) as 'S' | 'M' | 'L';
}

/** The recipe for `cfg` (header). `aMaxOfTask` is A_max when cfg.aMax = 0 (the task's reward range). */
export function recipe(cfg: Config, models: ModelMap = DEFAULT_MODELS, aMaxOfTask = 1): Recipe {
  const hf = (size: string): string => {
    const id = (models as Record<string, string>)[size];
    if (!id) throw new ConfigError('model', size, `No Hugging Face id for the zoo size "${size}"; give one (S, M and L each need an id).`);
    return id;
  };
  const agents = Array.from({ length: cfg.agents }, (_, i) => ({
    name: `agent${i}`,
    path: isLlmTask(cfg.task) ? hf(modelOf(cfg, i)) : `tabular:${cfg.task}`,
    ...(cfg.deltas.length > 0 ? { delta: cfg.deltas[i]! } : {}),
    ...(cfg.swapAgent === i ? { upgrade: cfg.swapTo === 'best' ? 'best-response' : hf(cfg.swapTo) } : {}),
  }));
  const sat: Record<string, unknown> = {
    algorithm: { kl_ctrl: { kl_coef: cfg.beta, target_kl: cfg.delta, quantile: 1 - cfg.alpha } },
    sat: {
      protocol: cfg.protocol,
      epsilon: cfg.epsLow,
      A_clip: cfg.aClip,
      group_size: cfg.group,
      adv_mode: cfg.estimator,
      scheduler: { mode: cfg.order, ...(cfg.order === 'custom' ? { order: [...cfg.customOrder] } : {}) },
      max_backtracks: cfg.maxBacktracks,
      stage0_delta: cfg.swapStage0 ? cfg.stage0Delta : 0,
      agents,
    },
    certificate: { A_max: cfg.aMax > 0 ? cfg.aMax : aMaxOfTask, delta_conf: cfg.deltaConf },
  };
  const agg = cfg.objective === 'token' ? AGG[cfg.tokenAgg] : AGG.grpo;
  const verl = [
    'algorithm.adv_estimator=grpo',
    `algorithm.norm_adv_by_std_in_grpo=${cfg.norm === 'none' ? 'false' : 'true'}`,
    `actor_rollout_ref.model.path=${isLlmTask(cfg.task) ? hf(modelOf(cfg, 0)) : `tabular:${cfg.task}`}`,
    'actor_rollout_ref.actor.use_kl_loss=true',
    `actor_rollout_ref.actor.kl_loss_coef=${cfg.beta}`,
    `actor_rollout_ref.actor.clip_ratio_low=${cfg.epsLow}`,
    `actor_rollout_ref.actor.clip_ratio_high=${cfg.epsHigh}`,
    `actor_rollout_ref.actor.ppo_epochs=${cfg.epochs}`,
    `actor_rollout_ref.actor.loss_agg_mode=${agg}`,
    `actor_rollout_ref.actor.optim.lr=${cfg.lr}`,
    `actor_rollout_ref.actor.optim.weight_decay=${cfg.weightDecay}`,
    `actor_rollout_ref.rollout.n=${cfg.group}`,
    `actor_rollout_ref.rollout.temperature=${cfg.temperature}`,
    `actor_rollout_ref.rollout.top_k=${cfg.topK === 0 ? -1 : cfg.topK}`,
    `data.train_batch_size=${cfg.batch}`,
    `data.max_response_length=${cfg.maxNew}`,
    `trainer.total_training_steps=${cfg.stages}`,
  ];
  const yaml = `# SAT Playground settings as a SAT-style config (docs/real-run.md maps every key).\n${stringify(sat)}`;
  return { sat, yaml, verl, unmapped: CONFIG_KEYS.filter((k) => RECIPE[k].sat === null && RECIPE[k].verl === null) };
}

function at(o: unknown, path: string): unknown {
  let cur = o;
  for (const p of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || !(p in (cur as object))) return undefined;
    cur = (cur as Record<string, unknown>)[p];
  }
  return cur;
}

/**
 * Settings from a SAT-style YAML (header): every key it maps, read back and checked by the config
 * table (a bad value names the key); sizes are found from `models`' ids, and an A_max equal to
 * `aMaxOfTask` (the task's reward range, what aMax = 0 exports as) reads back as 0. Keys the YAML
 * cannot carry come from `base`. Throws FormatError for text that is not such a config.
 */
export function readRecipe(text: string, base: Config, opts: { readonly models?: ModelMap; readonly aMaxOfTask?: number } = {}): Config {
  const models = opts.models ?? DEFAULT_MODELS;
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (e) {
    throw new FormatError(`This is not a YAML file: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
  }
  if (doc === null || typeof doc !== 'object' || typeof at(doc, 'sat') !== 'object') {
    throw new FormatError('This YAML is not a SAT-style config: it has no "sat" section (export one with "Export for a real run").');
  }
  const s: Record<string, unknown> = {};
  const put = (key: ConfigKey, path: string, map: (v: unknown) => unknown = (v) => v) => {
    const v = at(doc, path);
    if (v !== undefined) s[key] = map(v);
  };
  put('beta', 'algorithm.kl_ctrl.kl_coef');
  put('delta', 'algorithm.kl_ctrl.target_kl');
  put('alpha', 'algorithm.kl_ctrl.quantile', (q) => (typeof q === 'number' ? Math.round((1 - q) * 1e12) / 1e12 : q));
  put('protocol', 'sat.protocol');
  put('epsLow', 'sat.epsilon');
  put('aClip', 'sat.A_clip');
  put('group', 'sat.group_size');
  put('estimator', 'sat.adv_mode');
  put('order', 'sat.scheduler.mode');
  put('customOrder', 'sat.scheduler.order');
  put('maxBacktracks', 'sat.max_backtracks');
  put('deltaConf', 'certificate.delta_conf');
  const stage0 = at(doc, 'sat.stage0_delta');
  if (typeof stage0 === 'number') {
    s.swapStage0 = stage0 > 0;
    if (stage0 > 0) s.stage0Delta = stage0;
  }
  const agents = at(doc, 'sat.agents');
  if (agents !== undefined) {
    if (!Array.isArray(agents) || agents.length === 0) throw new FormatError('"sat.agents" must be a non-empty list of {name, path}.');
    s.agents = agents.length;
    const sizeOf = (id: unknown, where: string): string => {
      const hit = (Object.entries(models) as [string, string][]).find(([, v]) => v === id);
      if (!hit) throw new FormatError(`${where} is ${JSON.stringify(id)}, which is none of the model ids mapped to the zoo's sizes (${Object.entries(models).map(([k, v]) => `${k} = ${v}`).join(', ')}).`);
      return hit[0];
    };
    const llm = agents.some((a) => typeof (a as { path?: unknown }).path === 'string' && !String((a as { path: string }).path).startsWith('tabular:'));
    if (llm) {
      const sizes = agents.map((a, i) => sizeOf((a as { path?: unknown }).path, `sat.agents[${i}].path`));
      if (sizes.every((x) => x === sizes[0])) {
        s.model = sizes[0];
        s.agentModels = [];
      } else s.agentModels = sizes;
    }
    const deltas = agents.map((a) => (a as { delta?: unknown }).delta);
    s.deltas = deltas.every((d) => typeof d === 'number') ? deltas : [];
    const up = agents.findIndex((a) => (a as { upgrade?: unknown }).upgrade !== undefined);
    if (up >= 0) {
      s.swapAgent = up;
      const to = (agents[up] as { upgrade: unknown }).upgrade;
      s.swapTo = to === 'best-response' ? 'best' : sizeOf(to, `sat.agents[${up}].upgrade`);
    } else s.swapAgent = -1;
  }
  const aMax = at(doc, 'certificate.A_max');
  if (typeof aMax === 'number') s.aMax = aMax === (opts.aMaxOfTask ?? 1) ? 0 : aMax;
  return parseConfig(s, base);
}

/** The Markdown table of docs/real-run.md: every setting, its two counterparts and the note. */
export function recipeTable(): string {
  const cell = (x: string | null | undefined) => (x ? `\`${x}\`` : '—');
  const esc = (x: string) => x.replace(/\|/g, '\\|');
  const rows = CONFIG_KEYS.map((k) => `| \`${k}\` | ${cell(RECIPE[k].sat)} | ${cell(RECIPE[k].verl)} | ${esc(RECIPE[k].note ?? '')} |`);
  return ['| setting | SAT-style YAML | verl override | note |', '|---|---|---|---|', ...rows].join('\n');
}
