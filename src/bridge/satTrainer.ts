/**
 * The export to the SAT authors' trainer (Yydc/SAT-AAMAS `scripts/train.py`): the YAML it parses,
 * with only keys its code reads (tests/fixtures/bridge/sat-aamas.keys.json names the file reading
 * each), and the settings it cannot run refused by name (`satTrainerRefusals`). A `playground:`
 * section, which the trainer never reads, carries every non-default setting, so importing the YAML
 * back (`readSatTrainer`) reproduces the experiment exactly.
 *
 * Not here: the mapping table for people (recipe.ts), the other engines.
 */
import { parse, stringify } from 'yaml';
import { FormatError } from '../core/errors';
import { diffConfig, isLlmTask, parseConfig, resolvedProtocol, type Config, type ConfigKey } from '../sat/config';
import { checkInputSize, RECIPE_LIMITS } from './limits';
import { DEFAULT_MODELS, hfId, sizeOf, type ModelMap } from './models';
import { withDiffers, type Difference, type EngineExport, type Refusal } from './engine';
import { DATA_FILES, responseTokens } from './taskData';

/** Why a seat swapped to an ONNX folder cannot be exported: the engines load training checkpoints. */
export const ONNX_SWAP =
  "swapTo onnx: the seat's ONNX folder (the command line's --swap J=DIR) is an inference export with no trainable weights; the SAT authors' scripts/plug_and_play.py loads sat.agents[*].upgrade with Hugging Face from_pretrained (AutoTokenizer, and AutoModelForCausalLM in sat/models/causal_lm.py), which reads a PyTorch or safetensors checkpoint, not ONNX. Set swapTo = S, M or L and map that size to the checkpoint the ONNX folder was exported from.";

/** Our update orders → AgentScheduler modes (sat/agent_scheduler.py); absent = refused. */
const SCHEDULER: Partial<Record<Config['order'], string>> = { fixed: 'static', random: 'random' };

/**
 * What the SAT authors' trainer cannot run of `cfg`, each with its reason: orders other than fixed
 * and random (its StageCoordinator passes no predicted gains, so greedy_info_gain falls back to
 * static); a swap to best (tabular) or to an ONNX folder (not a checkpoint); protocols other than independent (agent (g·G + k) mod n alone answers sample k of group
 * g); batch normalisation (adv_mode grpo is our group baseline); countdown (its built-in reward
 * compares the response's last number with `chosen`).
 */
export function satTrainerRefusals(cfg: Config): Refusal[] {
  const out: Refusal[] = [];
  if (!isLlmTask(cfg.task)) return [{ setting: 'task', message: `"${cfg.task}" is a tabular game; the SAT authors' trainer trains language models (a path like tabular:${cfg.task} would be loaded as a Hugging Face id).` }];
  if (cfg.task === 'countdown') out.push({ setting: 'task', message: "countdown answers are expressions; the SAT authors' trainer's reward is built in (sat/real_controller.py _compute_reward: the last number of the response against the reference) and has no hook for another verifier. Use verl or TeamTR, whose reward is the exported reward.py." });
  const protocol = resolvedProtocol(cfg);
  if (protocol !== 'independent') out.push({ setting: 'protocol', message: `protocol ${protocol}: in the SAT authors' trainer every response is written by one agent alone (sat/real_controller.py _generate_train_rollout), which is the independent protocol; set protocol = independent to export.` });
  if (!SCHEDULER[cfg.order]) {
    const why = cfg.order === 'greedy' ? "its greedy_info_gain falls back to the static order because the stage coordinator passes no predicted gains (sat/stage_coordinator.py, sat/agent_scheduler.py)" : 'its AgentScheduler accepts static, random and greedy_info_gain only';
    out.push({ setting: 'order', message: `order ${cfg.order}: ${why}; set order = fixed (static) or random.` });
  }
  if (cfg.norm === 'batch') out.push({ setting: 'norm', message: 'norm batch (std over the whole batch): its advantages normalise per group (sat.group_norm) or not at all; set norm = group or none.' });
  if (cfg.swapAgent >= 0 && cfg.swapTo === 'best') out.push({ setting: 'swapTo', message: 'swapTo best is a tabular best response; the trainer swaps in Hugging Face checkpoints.' });
  if (cfg.swapAgent >= 0 && cfg.swapTo === 'onnx') out.push({ setting: 'swapTo', message: ONNX_SWAP });
  return out;
}

/**
 * What the SAT authors' trainer runs differently from the playground with `cfg` (the export still
 * runs): keys it has no room for, and its fixed choices (sat/kl/quantile_kl_ctrl.py,
 * sat/stage_coordinator.py, sat/real_controller.py).
 */
export function satTrainerDiffers(cfg: Config): Difference[] {
  const out: Difference[] = [];
  const add = (when: boolean, setting: ConfigKey, message: string) => when && out.push({ setting, message });
  add(cfg.epsHigh !== cfg.epsLow, 'epsHigh', `one symmetric ε (sat.epsilon = epsLow = ${cfg.epsLow}); epsHigh = ${cfg.epsHigh} is not carried.`);
  add(cfg.objective === 'token', 'objective', 'its loss always uses the sequence-level ratio (sat/loss/seq_ratio_loss.py); the token objective is not carried.');
  add(cfg.topK > 0, 'topK', `it samples every token (top_p = 1); topK = ${cfg.topK} is not carried.`);
  add(cfg.formatReward > 0, 'formatReward', `its reward is built in (1 or 0); the format reward ${cfg.formatReward} is not carried (verl's and TeamTR's reward.py carry it).`);
  add(cfg.rewardMode === 'strict', 'rewardMode', 'its reward is built in and reads the last number of the reply, as rewardMode = extract does for arithmetic; strict grading is not carried.');
  add(cfg.lora > 0, 'lora', `it trains all weights; LoRA rank ${cfg.lora} is not carried.`);
  add(cfg.epochs > 1, 'epochs', `one optimizer step per try; ${cfg.epochs} epochs are not carried.`);
  add(cfg.onExhausted !== 'keep', 'onExhausted', `when the retries run out it keeps the last violating step (keep), not ${cfg.onExhausted}.`);
  add(cfg.retryLrFactor !== 1, 'retryLrFactor', `its retries keep the step size (β ×1.5 only); retryLrFactor = ${cfg.retryLrFactor} is not carried.`);
  add(true, 'betaAdapt', `it raises β ×1.5 after each backtrack and never lowers it${cfg.betaAdapt ? ' (no ÷1.5 when the KL ends below δ/1.5)' : '; betaAdapt = false is not carried'}.`);
  add(cfg.deltas.length > 0, 'deltas', `one target_kl (δ = ${cfg.delta}) for every agent; the per-agent radii stay in the playground: section only.`);
  add(true, 'maxNew', `a real tokenizer gets ${responseTokens(cfg)} response tokens for the playground's ${cfg.maxNew} characters.`);
  return out;
}

/** The config object their scripts/train.py reads, for `cfg` (call only when nothing is refused). */
export function satTrainerConfig(cfg: Config, models: ModelMap, aMaxOfTask: number, dataDir: string, name: string): Record<string, unknown> {
  const agents = Array.from({ length: cfg.agents }, (_, i) => ({
    name: `agent${i}`,
    path: hfId(models, sizeOf(cfg, i)),
    ...(cfg.swapAgent === i ? { upgrade: hfId(models, cfg.swapTo) } : {}),
  }));
  return {
    algorithm: { gamma: cfg.gamma, kl_ctrl: { kl_coef: cfg.beta, target_kl: cfg.delta, quantile: 1 - cfg.alpha } },
    data: { train_batch_size: cfg.batch * cfg.group, max_response_length: responseTokens(cfg) },
    generation: { temperature: cfg.temperature, top_p: 1.0 },
    sat: {
      epsilon: cfg.epsLow,
      A_clip: cfg.aClip,
      group_size: cfg.group,
      adv_mode: 'grpo',
      group_baseline: 'mean',
      group_norm: cfg.norm === 'group',
      scheduler: { mode: SCHEDULER[cfg.order] },
      max_backtracks: cfg.maxBacktracks,
      stage0_delta: cfg.swapStage0 ? cfg.stage0Delta : 0,
      agents,
    },
    training: { learning_rate: cfg.lr, weight_decay: cfg.weightDecay, num_stages: cfg.stages },
    certificate: { A_max: cfg.aMax > 0 ? cfg.aMax : aMaxOfTask, delta_conf: cfg.deltaConf },
    dataset: { train_path: `${dataDir}/${DATA_FILES.satTrain}`, test_path: `${dataDir}/${DATA_FILES.satTest}` },
    logging: { save_dir: `outputs/${name}`, checkpoint_every_stage: cfg.stages },
    playground: diffConfig(cfg),
  };
}

/** The export: YAML text and the command, or the refusals; `notMapped` as in verlExport. */
export function satTrainerExport(cfg: Config, models: ModelMap, aMaxOfTask: number, dataDir: string, name: string, yamlFile: string, notMapped: readonly Difference[] = []): EngineExport {
  const refused = satTrainerRefusals(cfg);
  if (refused.length > 0) return { ok: false, engine: 'satTrainer', refused };
  const doc = satTrainerConfig(cfg, models, aMaxOfTask, dataDir, name);
  // scripts/train.py puts its own checkout on sys.path, so it runs from the recipe's folder, where the dataset paths are.
  const command = `python "$SAT_AAMAS/scripts/train.py" --config ${yamlFile} --seed ${cfg.seed}`;
  const differs = [...satTrainerDiffers(cfg), ...notMapped];
  const text = `# SAT Playground settings for the SAT authors' trainer (Yydc/SAT-AAMAS scripts/train.py); from this folder:\n#   ${command}\n# Every key is one its code reads; "playground" is read only by the playground's Import (docs/real-run.md).\n${stringify(doc)}`;
  return { ok: true, engine: 'satTrainer', overrides: [], command, files: [{ path: yamlFile, text: withDiffers(text, differs) }], differs };
}

function at(o: unknown, path: string): unknown {
  let cur = o;
  for (const p of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || !(p in (cur as object))) return undefined;
    cur = (cur as Record<string, unknown>)[p];
  }
  return cur;
}

/** The sections the import reads keys from, each a map when present, and a few of its keys (for the message when it is not). */
const SECTIONS_KEYS = {
  sat: 'epsilon, group_size, agents, …',
  'sat.scheduler': 'mode',
  algorithm: 'gamma, kl_ctrl',
  'algorithm.kl_ctrl': 'kl_coef, target_kl, quantile',
  certificate: 'delta_conf, A_max',
  generation: 'temperature',
  training: 'learning_rate, weight_decay, num_stages',
  data: 'train_batch_size',
} as const;
const SECTIONS = Object.keys(SECTIONS_KEYS) as (keyof typeof SECTIONS_KEYS)[];

/** What a YAML value is, in words, for a message: "a list of 3 items", "the number 4", "empty". */
function kindOfValue(v: unknown): string {
  if (v === null) return 'empty';
  if (Array.isArray(v)) return `a list of ${v.length} item${v.length === 1 ? '' : 's'}`;
  if (typeof v === 'string') return `the text ${quoteShort(v)}`;
  return `the ${typeof v} ${String(v)}`;
}

/** A text from the file for a message: at most 40 characters of it. */
function quoteShort(t: string): string {
  return JSON.stringify(t.length <= 40 ? t : `${t.slice(0, 40)}…`);
}

/**
 * Settings from a YAML of this shape (the page's and the CLI's import): the `playground` section's
 * settings on top of `base`, then every key the trainer reads that maps back to a setting (so an
 * edited `kl_coef` wins). Model ids map back to sizes through `models`; an A_max equal to
 * `aMaxOfTask` reads back as 0. Throws FormatError for text that is not such a config, or too big.
 */
export function readSatTrainer(text: string, base: Config, opts: { readonly models?: ModelMap; readonly aMaxOfTask?: number } = {}): Config {
  checkInputSize(text, RECIPE_LIMITS, 'recipe');
  const models = opts.models ?? DEFAULT_MODELS;
  let doc: unknown;
  try {
    doc = parse(text, { maxAliasCount: 100 });
  } catch (e) {
    throw new FormatError(`This is not a YAML file: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc) || at(doc, 'sat') === undefined || at(doc, 'sat') === null) {
    throw new FormatError('This YAML is not a SAT-style config: it has no "sat" section (export one with "Export for a real run").');
  }
  for (const section of SECTIONS) {
    const v = at(doc, section);
    if (v !== undefined && (v === null || typeof v !== 'object' || Array.isArray(v))) {
      throw new FormatError(`The recipe's "${section}" section is ${kindOfValue(v)}, not the map of settings (${SECTIONS_KEYS[section]}) the SAT authors' trainer reads there. Nothing was read.`);
    }
  }
  const pg = at(doc, 'playground');
  if (pg !== undefined && (pg === null || typeof pg !== 'object' || Array.isArray(pg))) throw new FormatError('"playground" must be a map of settings (as "Export for a real run" writes it).');
  const start = pg ? parseConfig(pg as Record<string, unknown>, base) : base;
  const s: Partial<Record<ConfigKey, unknown>> = {};
  const put = (key: ConfigKey, path: string, map: (v: unknown) => unknown = (v) => v) => {
    const v = at(doc, path);
    if (v !== undefined) s[key] = map(v);
  };
  put('beta', 'algorithm.kl_ctrl.kl_coef');
  put('delta', 'algorithm.kl_ctrl.target_kl');
  put('alpha', 'algorithm.kl_ctrl.quantile', (q) => (typeof q === 'number' ? Math.round((1 - q) * 1e12) / 1e12 : q));
  put('gamma', 'algorithm.gamma');
  put('epsLow', 'sat.epsilon');
  put('aClip', 'sat.A_clip');
  put('group', 'sat.group_size');
  put('maxBacktracks', 'sat.max_backtracks');
  put('deltaConf', 'certificate.delta_conf');
  put('temperature', 'generation.temperature');
  put('lr', 'training.learning_rate');
  put('weightDecay', 'training.weight_decay');
  put('stages', 'training.num_stages');
  const mode = at(doc, 'sat.scheduler.mode');
  if (mode !== undefined) {
    const order = (Object.entries(SCHEDULER) as [string, string][]).find(([, m]) => m === mode)?.[0];
    if (!order) throw new FormatError(`sat.scheduler.mode is ${JSON.stringify(mode)}; the playground reads static (its fixed order) and random.`);
    s.order = order;
  }
  const norm = at(doc, 'sat.group_norm');
  if (typeof norm === 'boolean') s.norm = norm ? 'group' : 'none';
  const stage0 = at(doc, 'sat.stage0_delta');
  if (typeof stage0 === 'number') {
    s.swapStage0 = stage0 > 0;
    if (stage0 > 0) s.stage0Delta = stage0;
  }
  const agents = at(doc, 'sat.agents');
  if (agents !== undefined) {
    if (!Array.isArray(agents) || agents.length === 0) throw new FormatError('"sat.agents" must be a non-empty list of {name, path}.');
    s.agents = agents.length;
    const sizeOfId = (id: unknown, where: string): string => {
      const hit = (Object.entries(models) as [string, string][]).find(([, v]) => v === id);
      if (!hit) throw new FormatError(`${where} is ${JSON.stringify(id)}, which is none of the model ids mapped to the zoo's sizes (${Object.entries(models).map(([k, v]) => `${k} = ${v}`).join(', ')}).`);
      return hit[0];
    };
    const sizes = agents.map((a, i) => sizeOfId((a as { path?: unknown })?.path, `sat.agents[${i}].path`));
    if (sizes.every((x) => x === sizes[0])) {
      s.model = sizes[0];
      s.agentModels = [];
    } else s.agentModels = sizes;
    const up = agents.findIndex((a) => (a as { upgrade?: unknown })?.upgrade !== undefined);
    if (up >= 0) {
      s.swapAgent = up;
      s.swapTo = sizeOfId((agents[up] as { upgrade: unknown }).upgrade, `sat.agents[${up}].upgrade`);
    } else s.swapAgent = -1;
    if (start.deltas.length > 0 && start.deltas.length !== agents.length) s.deltas = [];
  }
  const aMax = at(doc, 'certificate.A_max');
  if (typeof aMax === 'number') s.aMax = aMax === (opts.aMaxOfTask ?? 1) ? 0 : aMax;
  const batch = at(doc, 'data.train_batch_size');
  const group = (s.group ?? start.group) as number;
  if (typeof batch === 'number' && typeof group === 'number' && batch % group === 0) s.batch = batch / group;
  return parseConfig(s as Record<string, unknown>, start);
}
