/**
 * "Export for a real run": the playground's settings as runs of three real engines — the SAT
 * authors' trainer (satTrainer.ts), verl (verl.ts, the single-policy baseline) and TeamTR
 * (teamtr.ts) — with the task's data and reward beside them, and the table `RECIPE` that says, for
 * a setting of src/sat/config.ts, where it goes in each engine or why it goes nowhere. A setting
 * with no row (a new one) is `NOT_MAPPED`: no engine takes it, and every export lists it under
 * "runs differently", so adding a setting needs only its config row. A setting an engine would
 * run differently is refused by name, never exported "nearly right". docs/real-run.md's table is
 * generated from RECIPE (`recipeTable`).
 *
 * Not here: the settings themselves (config.ts), the file dialogs (the page, the CLI).
 */
import { CST, Lexer, Parser } from 'yaml';
import { ConfigError, FormatError } from '../core/errors';
import { boundedMessage } from '../core/text';
import { RECIPE_MAX_DEPTH } from '../core/limits';
import { CONFIG_KEYS, isLlmTask, resolvedProtocol, type Config, type ConfigKey } from '../sat/config';
import type { LlmTaskName } from '../tasks/llm/index';
import { checkInputSize, RECIPE_LIMITS } from './limits';
import { ENGINE_TITLES, type Difference, type EngineExport, type EngineName, type ExportFile } from './engine';
import { DEFAULT_MODELS, type ModelMap } from './models';
import { rewardModule } from './rewardPy';
import { readSatTrainer, satTrainerExport } from './satTrainer';
import { DATA_FILES, problemsOf, satRows, teamtrRows, verlRows } from './taskData';
import { teamtrExport } from './teamtr';
import { siteCustomizeModule, TEAM_FILES, teamplayModule, teamtrRolloutModule, VERL_TEAM_FILES, verlTeamLoopModule, type TeamProtocol } from './teamPy';
import { verlExport, verlOverridesFile, verlRunsTeam } from './verl';

export { DEFAULT_MODELS, type ModelMap } from './models';
export { ENGINE_TITLES, type Difference, type EngineExport, type EngineName } from './engine';

/** Where one playground setting goes in each engine: a key, or null (then the note says why). */
export interface RecipeEntry {
  readonly satTrainer: string | null;
  readonly verl: string | null;
  readonly teamtr: string | null;
  /** How the value reads on the other side, or why it has no counterpart. */
  readonly note: string;
}

const NONE = (note: string): RecipeEntry => ({ satTrainer: null, verl: null, teamtr: null, note });
const V = 'actor_rollout_ref';

/** Where a setting with no row in RECIPE goes: nowhere, and each export says so (`notMapped`). */
export const NOT_MAPPED: RecipeEntry = NONE('Not mapped to any engine yet: every export lists it under "runs differently".');

/** The mapping: a row per setting an engine takes, or whose reason for going nowhere is worth saying (header). */
export type RecipeTable = Readonly<Partial<Record<ConfigKey, RecipeEntry>>>;

/** The settings of the config table, by meaning; a setting without a row is NOT_MAPPED. */
export const RECIPE: RecipeTable = {
  task: { satTrainer: 'dataset.train_path', verl: 'data.train_files', teamtr: 'data.train_files', note: 'The task is the data: its prompts are written as each engine\'s dataset and its verifier as reward.py (verl reward.custom_reward_function, TeamTR custom_reward_function). The SAT authors\' trainer has a built-in numeric reward, so countdown is refused there; tabular games are refused everywhere.' },
  protocol: { satTrainer: null, verl: `${V}.rollout.agent.default_agent_loop`, teamtr: `${V}.rollout.name`, note: 'TeamTR (rollout.name=multi_agent_hf) plays independent and chain through the exported rollout (teamplay.py, teamtr_rollout.py, put in place by sitecustomize.py): agent j sees the episode\'s earlier messages exactly as the playground builds them; vote and router are refused. verl: a chain of several agents is trained agent by agent by the exported driver (X.verl-team.py), each run\'s agent loop (verl_team_loop.py, default_agent_loop=sat_team_agent) playing the chain against teammates served from their current checkpoints; with any other protocol verl trains agent 0 alone. The SAT authors\' trainer has each response written by one agent alone: independent only.' },
  agents: { satTrainer: 'sat.agents', verl: `${V}.model.path`, teamtr: `${V}.rollout.agent_model_paths`, note: 'One entry per agent. verl trains one policy per run: a chain\'s driver gives each agent its own runs (its current checkpoint as model.path); otherwise agent 0 alone.' },
  actions: NONE('A tabular game\'s action count; a language model\'s actions are its vocabulary.'),
  taskSeed: { satTrainer: 'dataset.train_path', verl: 'data.train_files', teamtr: 'data.train_files', note: 'Fixes the generated problems written into the data files.' },
  penaltyK: NONE('A payoff of the penalty matrix game (tabular only).'),
  initScale: NONE('Random initial logits of tabular agents; real agents start from their checkpoints.'),
  level: { satTrainer: 'dataset.train_path', verl: 'data.train_files', teamtr: 'data.train_files', note: 'The difficulty of the problems written into the data files.' },
  model: { satTrainer: 'sat.agents[*].path', verl: `${V}.model.path`, teamtr: `${V}.rollout.agent_model_paths`, note: 'The size S/M/L mapped to a Hugging Face id (choose your own). verl: agent 0\'s (a chain\'s driver: each agent\'s starting checkpoint); TeamTR: model.path is agent 0\'s too.' },
  backend: NONE('Where the playground computes (CPU kernels, WebGPU); a real run uses its GPUs.'),
  activations: NONE('How the playground\u2019s CPU kernels multiply a quantized base (int8 activations are a speed choice of ours); a real run computes in its engine\u2019s own precision.'),
  agentModels: { satTrainer: 'sat.agents[*].path', verl: null, teamtr: `${V}.rollout.agent_model_paths`, note: 'Per-agent sizes, mapped like model.' },
  lora: { satTrainer: null, verl: `${V}.model.lora_rank`, teamtr: `${V}.model.lora_rank`, note: 'verl also gets target_modules=all-linear and rollout.load_format=safetensors (vLLM rounds the rank up to 1, 8, 16, 32, 64, …); refused for verl\'s chain driver, whose merged checkpoints would drop the adapter. The SAT authors\' trainer trains all weights (no LoRA key).' },
  loraAlpha: { satTrainer: null, verl: `${V}.model.lora_alpha`, teamtr: `${V}.model.lora_alpha`, note: 'Written with lora > 0.' },
  temperature: { satTrainer: 'generation.temperature', verl: `${V}.rollout.temperature`, teamtr: `${V}.rollout.temperature`, note: 'The sampling temperature of every rollout.' },
  topK: { satTrainer: null, verl: `${V}.rollout.top_k`, teamtr: `${V}.rollout.top_k`, note: 'verl (vLLM): 0 = all tokens is written -1; TeamTR\'s Hugging Face sampler takes 0. The SAT authors\' trainer samples with top_p only.' },
  maxNew: { satTrainer: 'data.max_response_length', verl: 'data.max_response_length', teamtr: 'data.max_response_length', note: 'The playground counts characters of a char-level model; a real tokenizer and an instruct model need another budget: 4 × maxNew tokens, at least 64 for a bare answer (rewardMode strict) or 256 for a worked one (extract).' },
  evalEpisodes: { satTrainer: 'dataset.test_path', verl: 'data.val_files', teamtr: 'data.val_files', note: 'The held-out problems behind J, written as the validation file (verl and TeamTR validate every step: trainer.test_freq=1).' },
  formatReward: { satTrainer: null, verl: 'reward.custom_reward_function.path', teamtr: 'custom_reward_function.path', note: 'A constant of reward.py. The SAT authors\' reward is built in (1 or 0): a format reward > 0 is not carried there.' },
  rewardMode: { satTrainer: null, verl: 'reward.custom_reward_function.path', teamtr: 'custom_reward_function.path', note: 'A constant of reward.py (REWARD_MODE) and the instruction line of every prompt: strict grades the whole reply as the playground does (its J); extract grades the last \\boxed{…}, the text after ####, else the last number (countdown: the last line). The SAT authors\' reward is built in: it reads the last number of the reply, whatever the mode.' },
  seed: { satTrainer: null, verl: 'data.seed', teamtr: 'teamtr_router_seed', note: 'verl: shuffles the data. TeamTR reads its rows in file order (data.shuffle=false, so each step holds the same problems for every agent) and gets it as teamtr_router_seed. The SAT authors\' trainer takes --seed on its command line (written there). A real run has further seeds (sampling, initialisation).' },
  stages: { satTrainer: 'training.num_stages', verl: 'trainer.total_training_steps', teamtr: 'trainer.total_training_steps', note: 'One stage per training step. verl with a chain: stages × agents runs of one step each, in update order, each on its stage\'s problems.' },
  scheme: NONE('sequential is SAT; TeamTR updates agents in turn from one batch per step, which for the independent protocol is the same (an agent\'s update does not change another\'s episodes) and for chain reuses the step\'s episodes for every agent. verl\'s chain driver is sequential with fresh episodes per agent; simultaneous has no counterpart there.'),
  batch: { satTrainer: 'data.train_batch_size', verl: 'data.train_batch_size', teamtr: 'data.train_batch_size', note: 'Prompts per stage. The SAT authors\' trainer counts episodes (batch × group); TeamTR counts rows, one per problem and agent (batch × agents). ppo_mini_batch_size is the whole batch (one optimizer step per epoch, as here).' },
  group: { satTrainer: 'sat.group_size', verl: `${V}.rollout.n`, teamtr: `${V}.rollout.n`, note: 'Samples per prompt (GRPO group). TeamTR: per prompt and agent, each agent with its own group baseline (agents × group samples a prompt), where the playground\'s independent protocol shares one group, sample k answered by agent k mod n.' },
  estimator: NONE('How agent j\'s advantages account for its predecessors\' updates (docs/method.md §4.2). No engine has the key: the SAT authors\' trainer reweights one batch per stage (truncated importance sampling, sat/data/reweighting.py); for the independent protocol the estimators coincide; TeamTR\'s chain reuses one batch of episodes for every agent, with no importance weights; verl\'s chain driver plays fresh episodes for each agent after its predecessors\' updates, as resample does.'),
  norm: { satTrainer: 'sat.group_norm', verl: 'algorithm.norm_adv_by_std_in_grpo', teamtr: 'algorithm.norm_adv_by_std_in_grpo', note: 'group → true, none → false (with the group mean as baseline: sat.adv_mode grpo, group_baseline mean); batch is refused.' },
  aClip: { satTrainer: 'sat.A_clip', verl: null, teamtr: null, note: 'verl clips ratios, not advantages.' },
  probeEpisodes: NONE('A diagnostic of the playground\'s certificate (the bias probe).'),
  objective: { satTrainer: null, verl: `${V}.actor.policy_loss.loss_mode`, teamtr: `${V}.actor.policy_loss.loss_mode`, note: 'sequence (one ratio per message, docs/method.md §5.1) → verl gspo, TeamTR geo_mean: the nearest sequence-level ratios, length-normalised, so NOT the same; token → vanilla. The SAT authors\' trainer always uses its sequence ratio (sat/loss/seq_ratio_loss.py).' },
  tokenAgg: { satTrainer: null, verl: `${V}.actor.loss_agg_mode`, teamtr: `${V}.actor.loss_agg_mode`, note: 'grpo → seq-mean-token-mean, bnpo → token-mean, dr_grpo → verl\'s DrGRPO: seq-mean-token-sum-norm with use_kl_loss=false and norm_adv_by_std_in_grpo=false. With objective sequence: seq-mean-token-mean.' },
  epsLow: { satTrainer: 'sat.epsilon', verl: `${V}.actor.clip_ratio_low`, teamtr: `${V}.actor.clip_ratio_low`, note: 'sat.epsilon is one symmetric ε: epsLow is written there.' },
  epsHigh: { satTrainer: null, verl: `${V}.actor.clip_ratio_high`, teamtr: `${V}.actor.clip_ratio_high`, note: 'The SAT authors\' trainer has one symmetric ε (sat.epsilon, written from epsLow).' },
  beta: { satTrainer: 'algorithm.kl_ctrl.kl_coef', verl: `${V}.actor.kl_loss_coef`, teamtr: `${V}.actor.kl_loss_coef`, note: 'verl / TeamTR: with use_kl_loss=true and kl_loss_type=low_var_kl, a sampled estimate of the KL to the reference model, where ours is the exact per-state KL to π_cur.' },
  betaAdapt: NONE('The SAT authors\' trainer always raises β ×1.5 after a backtrack (sat/kl/quantile_kl_ctrl.py); verl and TeamTR keep kl_loss_coef fixed.'),
  lr: { satTrainer: 'training.learning_rate', verl: `${V}.actor.optim.lr`, teamtr: `${V}.actor.optim.lr`, note: 'Real models need far smaller rates (verl\'s default is 1e-6).' },
  epochs: { satTrainer: null, verl: `${V}.actor.ppo_epochs`, teamtr: `${V}.actor.ppo_epochs`, note: 'The SAT authors\' trainer takes one step per try (its backtracking loop).' },
  weightDecay: { satTrainer: 'training.weight_decay', verl: `${V}.actor.optim.weight_decay`, teamtr: `${V}.actor.optim.weight_decay`, note: 'The SAT authors\' trainer applies it to its built-in tiny model; Hugging Face agents get 0.01 (sat/real_controller.py).' },
  delta: { satTrainer: 'algorithm.kl_ctrl.target_kl', verl: null, teamtr: null, note: 'verl and TeamTR have no trust-region monitor.' },
  deltas: NONE('Per-agent radii: the SAT authors\' trainer reads one target_kl for every agent (sat/kl/quantile_kl_ctrl.py); kept in the YAML\'s playground section for the playground\'s Import.'),
  alpha: { satTrainer: 'algorithm.kl_ctrl.quantile', verl: null, teamtr: null, note: 'Written as the quantile 1 − α the monitor checks.' },
  maxBacktracks: { satTrainer: 'sat.max_backtracks', verl: null, teamtr: null, note: 'verl and TeamTR have no backtracking (no trust-region monitor).' },
  retryLrFactor: NONE('The SAT authors\' retries keep the step size (β ×1.5 only); no engine has the key.'),
  onExhausted: NONE('The SAT authors\' trainer keeps the last violating step when the retries run out (keep); no engine has the key.'),
  order: { satTrainer: 'sat.scheduler.mode', verl: null, teamtr: null, note: 'fixed → static, random → random; greedy, reverse and custom are refused (its greedy_info_gain falls back to static: no predicted gains are passed). TeamTR runs fixed only; others refused. verl\'s chain driver runs fixed, reverse and custom (the order is written into X.verl-team.py); random and greedy are refused for a chain.' },
  customOrder: NONE('Only with order = custom, which no engine runs.'),
  certForm: NONE('Which of the playground\'s certificate forms its charts show.'),
  gamma: { satTrainer: 'algorithm.gamma', verl: null, teamtr: null, note: 'The discount of the SAT authors\' certificate monitor.' },
  deltaConf: { satTrainer: 'certificate.delta_conf', verl: null, teamtr: null, note: 'verl and TeamTR compute no certificate.' },
  certEpisodes: NONE('The playground\'s fresh certification batch (docs/certificate.md); no engine has one.'),
  certRounds: NONE('The rounds of the playground\'s sequential certificate (docs/certificate.md §5.3).'),
  certCap: NONE('The most certification episodes a stage of the playground may draw (docs/certificate.md §5.3).'),
  certStop: NONE('When the playground\'s sequential certificate stops drawing (docs/certificate.md §5.3).'),
  certBound: NONE('Which concentration bound the playground\'s certificate uses.'),
  certClip: NONE('The ratio truncation of the playground\'s language certificate.'),
  geoIters: NONE('Fisher-vector products of the playground\'s information-geometric gain (a diagnostic).'),
  aMax: { satTrainer: 'certificate.A_max', verl: null, teamtr: null, note: '0 means the task\'s reward range; written as that range.' },
  swapAgent: { satTrainer: 'sat.agents[*].upgrade', verl: null, teamtr: null, note: 'Read by the SAT authors\' scripts/plug_and_play.py; verl and TeamTR have no mid-run swap (refused).' },
  swapAt: NONE('When the swap happens; the SAT authors\' plug_and_play.py swaps a trained team, not at a stage.'),
  swapTo: { satTrainer: 'sat.agents[*].upgrade', verl: null, teamtr: null, note: 'Mapped like model; best (a tabular best response) and onnx (an ONNX inference export, which no engine loads: give the checkpoint it came from as S, M or L) are refused.' },
  swapStage0: { satTrainer: 'sat.stage0_delta', verl: null, teamtr: null, note: 'Off is written as stage0_delta: 0.' },
  stage0Delta: { satTrainer: 'sat.stage0_delta', verl: null, teamtr: null, note: 'Read by the SAT authors\' plug_and_play.py; verl and TeamTR have no swap.' },
};

/** Where `key` goes in each engine: its row, or NOT_MAPPED. */
export function recipeEntry(key: ConfigKey, table: RecipeTable = RECIPE): RecipeEntry {
  return table[key] ?? NOT_MAPPED;
}

/** The settings `table` has no row for: each export lists them as not carried, with their values. */
export function notMapped(cfg: Config, table: RecipeTable = RECIPE): Difference[] {
  return CONFIG_KEYS.filter((k) => table[k] === undefined).map((k) => ({ setting: k, message: `not mapped by this engine: ${k} = ${JSON.stringify(cfg[k])} is not carried.` }));
}

/** The names of what an export writes, derived from the recipe file's name (e.g. "arith-team.sat.yaml"). */
export interface RecipeNames {
  /** Experiment name: the runs' experiment_name and log names. */
  readonly name: string;
  readonly yamlFile: string;
  readonly verlScript: string;
  /** verl's overrides, one per line. */
  readonly verlOverrides: string;
  readonly teamtrScript: string;
  /** Folder of the data and reward.py, relative to the recipe. */
  readonly dataDir: string;
}

/** The names for a recipe written as `yamlFile` (only its base name is used). */
export function recipeNames(yamlFile: string): RecipeNames {
  const base = yamlFile.split(/[\\/]/).pop()!;
  const name = base.replace(/\.sat\.ya?ml$|\.ya?ml$/i, '') || 'sat-playground';
  return { name, yamlFile: base, verlScript: `${name}.verl.sh`, verlOverrides: verlOverridesFile(name), teamtrScript: `${name}.teamtr.sh`, dataDir: `${name}.data` };
}

/** The exported recipe: each engine's export, and every file to write (engines, data, reward). */
export interface Recipe {
  readonly engines: Readonly<Record<EngineName, EngineExport>>;
  /** The SAT-style YAML (the SAT authors' trainer's config), or null when that engine refused. */
  readonly yaml: string | null;
  /** verl's overrides, one per line, or [] when verl refused. */
  readonly verl: readonly string[];
  readonly files: readonly ExportFile[];
  /** Settings with no counterpart in any engine (docs/real-run.md says why). */
  readonly unmapped: readonly ConfigKey[];
}

/**
 * The recipe for `cfg` (header). `aMaxOfTask` is A_max when cfg.aMax = 0 (the task's reward range);
 * `opts.table` is the mapping (RECIPE unless given).
 */
export function recipe(cfg: Config, models: ModelMap = DEFAULT_MODELS, aMaxOfTask = 1, yamlFile = 'sat-playground.sat.yaml', opts: { readonly data?: boolean; readonly table?: RecipeTable } = {}): Recipe {
  const n = recipeNames(yamlFile);
  const table = opts.table ?? RECIPE;
  const unlisted = notMapped(cfg, table);
  const engines: Record<EngineName, EngineExport> = {
    satTrainer: satTrainerExport(cfg, models, aMaxOfTask, n.dataDir, n.name, n.yamlFile, unlisted),
    verl: verlExport(cfg, models, n.dataDir, n.name, n.verlScript, unlisted),
    teamtr: teamtrExport(cfg, models, n.dataDir, n.name, n.teamtrScript, unlisted),
  };
  const files: ExportFile[] = Object.values(engines).flatMap((e) => (e.ok ? e.files : []));
  if (opts.data !== false && isLlmTask(cfg.task)) files.push(...dataFiles(cfg, n.dataDir, engines));
  const sat = engines.satTrainer;
  return {
    engines,
    yaml: sat.ok ? sat.files[0]!.text : null,
    verl: engines.verl.ok ? engines.verl.overrides : [],
    files,
    unmapped: CONFIG_KEYS.filter((k) => { const e = recipeEntry(k, table); return e.satTrainer === null && e.verl === null && e.teamtr === null; }),
  };
}

/**
 * The task's data files and reward module under `dataDir`, for the engines that export (`engines`):
 * each engine's rows only when it runs, reward.py when verl or TeamTR does (the SAT authors'
 * reward is built in).
 */
export function dataFiles(cfg: Config, dataDir: string, engines: Readonly<Record<EngineName, EngineExport>>): ExportFile[] {
  const { train, val } = problemsOf(cfg);
  const at = (f: string) => `${dataDir}/${f}`;
  const out: ExportFile[] = [];
  if (engines.verl.ok) out.push({ path: at(DATA_FILES.verlTrain), text: verlRows(cfg, train) }, { path: at(DATA_FILES.verlVal), text: verlRows(cfg, val) });
  if (engines.teamtr.ok) out.push({ path: at(DATA_FILES.teamtrTrain), text: teamtrRows(cfg, train) }, { path: at(DATA_FILES.teamtrVal), text: teamtrRows(cfg, val) });
  if (engines.satTrainer.ok) out.push({ path: at(DATA_FILES.satTrain), text: satRows(cfg, train, 'train') }, { path: at(DATA_FILES.satTest), text: satRows(cfg, val, 'test') });
  if (engines.verl.ok || engines.teamtr.ok) out.push({ path: at(DATA_FILES.reward), text: rewardModule(cfg.task as LlmTaskName, cfg.formatReward, cfg.rewardMode) });
  const verlTeam = engines.verl.ok && verlRunsTeam(cfg);
  if (engines.teamtr.ok || verlTeam) out.push({ path: at(TEAM_FILES.teamplay), text: teamplayModule(resolvedProtocol(cfg) as TeamProtocol, cfg.agents) });
  if (engines.teamtr.ok) out.push({ path: at(TEAM_FILES.rollout), text: teamtrRolloutModule() }, { path: at(TEAM_FILES.site), text: siteCustomizeModule() });
  if (verlTeam) out.push({ path: at(VERL_TEAM_FILES.loop), text: verlTeamLoopModule() });
  return out;
}

/** Per engine a line: its command, or refused with the reasons; under a command, an indented line per difference (for the CLI). */
export function recipeSummary(r: Recipe): string[] {
  return (Object.keys(r.engines) as EngineName[]).flatMap((k) => {
    const e = r.engines[k];
    if (!e.ok) return [`${ENGINE_TITLES[k]}: not exported — ${e.refused.map((x) => `${x.setting}: ${x.message}`).join(' ')}`];
    return [`${ENGINE_TITLES[k]}: ${e.command}`, ...e.differs.map((d) => `  runs differently — ${d.setting}: ${d.message}`)];
  });
}

/** Settings from a SAT-style YAML (the SAT authors' trainer's, as exported): see satTrainer.ts readSatTrainer. */
/** The YAML tags a recipe may carry: the core schema's, and `!` (non-specific). Anything else (`!!js/function`, `!!python/object/apply`, a local `!foo`) is refused by name. */
const RECIPE_TAGS: ReadonlySet<string> = new Set(['!', '!!str', '!!int', '!!float', '!!bool', '!!null', '!!map', '!!seq']);

/** The parser's entries that are collections: each one level of the value the YAML composes to. */
const COLLECTIONS: ReadonlySet<string> = new Set(['block-map', 'block-seq', 'flow-collection']);

/**
 * Checks a recipe's YAML before it is composed, in one linear pass over the YAML library's lexer
 * tokens: the size caps (limits.ts), the keys (every `:` that ends a key, quoted keys included)
 * against RECIPE_LIMITS.keys, no tag but the core schema's and no %TAG directive, and the nesting
 * against RECIPE_MAX_DEPTH. The nesting is exact: each token is fed to the library's own CST
 * parser, whose open collections (block maps and sequences — compact `- - x` ones and those a
 * deeper indentation opens —, flow `[`/`{`) sit on an explicit stack, counted after every token;
 * the first token that opens one level too many is refused, so that stack never holds more than
 * RECIPE_MAX_DEPTH + 1 levels (the composer, which recurses, never sees a deeper one). Indentation
 * alone opens nothing: a block scalar's lines, a plain scalar's continuation lines and indented
 * comments are text. A FormatError names the line and the limit or the tag.
 */
export function checkRecipeYaml(text: string): void {
  checkInputSize(text, RECIPE_LIMITS, 'recipe');
  let line = 1;
  let keys = 0;
  const parser = new Parser();
  for (const tok of new Lexer().lex(text)) {
    switch (CST.tokenType(tok)) {
      case 'map-value-ind':
        if (++keys > RECIPE_LIMITS.keys) throw new FormatError(`This recipe has more than ${RECIPE_LIMITS.keys.toLocaleString('en')} keys (quoted ones included); the playground reads at most that many. Nothing was read.`);
        break;
      case 'tag':
        if (!RECIPE_TAGS.has(tok)) throw new FormatError(`Line ${line} of this recipe carries the YAML tag ${JSON.stringify(tok.slice(0, 60))}, which the playground does not read: a recipe holds plain values (strings, numbers, booleans, lists and maps). Nothing was read.`);
        break;
      case 'directive-line':
        if (tok.startsWith('%TAG')) throw new FormatError(`Line ${line} of this recipe declares a %TAG directive, which the playground does not read. Nothing was read.`);
        break;
      default:
        break;
    }
    for (const doc of parser.next(tok)) void doc; // a finished document's CST: not kept
    let depth = 0;
    for (const t of parser.stack) if (COLLECTIONS.has(t.type)) depth++;
    if (depth > RECIPE_MAX_DEPTH) throw new FormatError(`Line ${line} of this recipe nests more than ${RECIPE_MAX_DEPTH} levels deep; a recipe nests a few (docs/models.md, "Input limits"). Nothing was read.`);
    for (let i = tok.indexOf('\n'); i !== -1; i = tok.indexOf('\n', i + 1)) line++; // newline tokens, and the line breaks inside a multi-line scalar
  }
}

/**
 * A SAT-style recipe YAML read back (the page's and the CLI's import): checked by
 * checkRecipeYaml before the YAML library parses it, then read as the SAT authors' trainer's
 * config (satTrainer.ts readSatTrainer).
 */
export function readRecipe(text: string, base: Config, opts: { readonly models?: ModelMap; readonly aMaxOfTask?: number } = {}): Config {
  checkRecipeYaml(text);
  try {
    return readSatTrainer(text, base, opts);
  } catch (e) {
    // a refusal may quote a value of the file: kept short (a 5,000-character model id is not repeated back whole)
    if (e instanceof ConfigError) throw new ConfigError(e.key, e.value, boundedMessage(e.message, 400));
    if (e instanceof FormatError) throw new FormatError(boundedMessage(e.message, 400));
    throw e;
  }
}

/** The Markdown table of docs/real-run.md: every setting, its counterpart in each engine and the note. */
export function recipeTable(table: RecipeTable = RECIPE): string {
  const cell = (x: string | null | undefined) => (x ? `\`${x}\`` : '—');
  const esc = (x: string) => x.replace(/\|/g, '\\|');
  const rows = CONFIG_KEYS.map((k) => {
    const e = recipeEntry(k, table);
    return `| \`${k}\` | ${cell(e.satTrainer)} | ${cell(e.verl)} | ${cell(e.teamtr)} | ${esc(e.note)} |`;
  });
  return ['| setting | SAT authors\' trainer (YAML) | verl override | TeamTR override | note |', '|---|---|---|---|---|', ...rows].join('\n');
}
