/**
 * The engines' own rules, as a checker the bridge tests hold every export against: the key lists
 * read from each engine's packaged config and the checks its code makes (tests/fixtures/bridge/*.json,
 * each citing repository, file and commit). A check returns the problems it finds, in words; an
 * empty list means the engine's own config checks would pass.
 *
 * Not here: the exports (src/bridge); this file only reads fixtures and judges.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

const FIX = join(import.meta.dirname, '../fixtures/bridge');
const load = (f: string) => JSON.parse(readFileSync(join(FIX, f), 'utf8'));

interface KeyList {
  readonly repository: string;
  readonly commit: string;
  readonly keys: Record<string, unknown>;
}
export const VERL_KEYS: KeyList = load('verl.keys.json');
export const TEAMTR_KEYS: KeyList = load('teamtr.keys.json');
export const TEAMTR_ADDITIONS = load('teamtr.additions.json');
export const SAT_KEYS = load('sat-aamas.keys.json');
export const CHECKS = load('checks.json');

/** A Hydra override value read back: booleans, numbers, lists, strings (quotes removed). */
export function hydraParse(v: string): unknown {
  if (v === 'true' || v === 'false') return v === 'true';
  if (v === 'null') return null;
  if (/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(v)) return Number(v);
  if (v.startsWith('[') && v.endsWith(']')) return v.slice(1, -1).split(',').filter((x) => x !== '').map((x) => hydraParse(x.trim()));
  if (/^'.*'$/.test(v)) return v.slice(1, -1);
  return v;
}

/** Overrides as (key, value, plus) triples; a malformed line is a problem. */
function readOverrides(lines: readonly string[], problems: string[]): { key: string; value: unknown; plus: boolean }[] {
  const out: { key: string; value: unknown; plus: boolean }[] = [];
  for (const line of lines) {
    const m = /^(\+?)([A-Za-z_][\w.]*)=(.*)$/.exec(line);
    if (!m) problems.push(`not a Hydra override: ${line}`);
    else out.push({ plus: m[1] === '+', key: m[2]!, value: hydraParse(m[3]!) });
  }
  return out;
}

interface VerlFamily {
  readonly name: string;
  readonly keys: ReadonlySet<string>;
  readonly defaults: Readonly<Record<string, unknown>>;
  /** Keys Hydra accepts only with '+' (read by getattr, in no config). */
  readonly plusKeys: ReadonlySet<string>;
  readonly rolloutNames: readonly string[];
  readonly lossAgg: readonly string[];
  readonly lossModes: readonly string[];
}

const heads = (model: string): number | null => CHECKS.model_heads[model]?.num_attention_heads ?? null;

/** Checks a verl-family override list against the engine's keys and config checks. */
function checkVerlFamily(e: VerlFamily, lines: readonly string[], extraDefaults: Record<string, unknown> = {}): string[] {
  const problems: string[] = [];
  const cfg: Record<string, unknown> = { ...e.defaults, ...extraDefaults };
  for (const { key, value, plus } of readOverrides(lines, problems)) {
    if (key.startsWith('hydra.')) continue; // Hydra's own settings
    if (plus ? !e.plusKeys.has(key) : !e.keys.has(key)) problems.push(`${e.name}: unknown key ${plus ? '+' : ''}${key}`);
    cfg[key] = value;
  }
  const get = (k: string) => cfg[k];
  const A = 'actor_rollout_ref';
  for (const [k, v] of Object.entries(cfg)) if (v === '???' && k.startsWith(`${A}.`)) problems.push(`${e.name}: ${k} is mandatory (??? in the packaged config) and not set`);
  const rn = get(`${A}.rollout.name`);
  if (rn !== '???' && !e.rolloutNames.includes(rn as string)) problems.push(`${e.name}: rollout.name ${String(rn)} is none of ${e.rolloutNames.join(', ')}`);
  if (get(`${A}.rollout.mode`) === 'sync' && rn !== 'multi_agent_hf') problems.push(`${e.name}: rollout.mode sync is refused`);
  if (!e.lossAgg.includes(get(`${A}.actor.loss_agg_mode`) as string)) problems.push(`${e.name}: loss_agg_mode ${String(get(`${A}.actor.loss_agg_mode`))} is not accepted`);
  if (!e.lossModes.includes(get(`${A}.actor.policy_loss.loss_mode`) as string)) problems.push(`${e.name}: policy_loss.loss_mode ${String(get(`${A}.actor.policy_loss.loss_mode`))} is not registered`);
  if (!CHECKS.verl.adv_estimator.options.includes(get('algorithm.adv_estimator'))) problems.push(`${e.name}: adv_estimator ${String(get('algorithm.adv_estimator'))} is unknown`);
  if (!CHECKS.verl.kl_loss_type.options.includes(get(`${A}.actor.kl_loss_type`))) problems.push(`${e.name}: kl_loss_type ${String(get(`${A}.actor.kl_loss_type`))} is unknown`);
  const num = (k: string) => get(k) as number;
  const set = (k: string) => get(k) !== null && get(k) !== undefined;
  if (!get(`${A}.actor.use_dynamic_bsz`)) {
    const micro = set(`${A}.actor.ppo_micro_batch_size`);
    const microPer = set(`${A}.actor.ppo_micro_batch_size_per_gpu`);
    if (micro === microPer) problems.push(`${e.name}: exactly one of actor.ppo_micro_batch_size / _per_gpu must be set`);
    const refUsed = get(`${A}.actor.use_kl_loss`) === true || get('algorithm.use_kl_in_reward') === true;
    for (const part of ['rollout', ...(refUsed ? ['ref'] : [])]) {
      if (set(`${A}.${part}.log_prob_micro_batch_size`) === set(`${A}.${part}.log_prob_micro_batch_size_per_gpu`)) problems.push(`${e.name}: exactly one of ${part}.log_prob_micro_batch_size / _per_gpu must be set`);
    }
    const nGpus = num('trainer.n_gpus_per_node') * num('trainer.nnodes');
    const tb = num('data.train_batch_size');
    const mini = num(`${A}.actor.ppo_mini_batch_size`);
    const n = num(`${A}.rollout.n`);
    if (!(tb >= mini)) problems.push(`${e.name}: train_batch_size (${tb}) must be >= actor.ppo_mini_batch_size (${mini})`);
    if ((tb * n) % nGpus !== 0) problems.push(`${e.name}: real_train_batch_size (${tb * n}) must be divisible by n_gpus (${nGpus})`);
    if ((mini * n) % nGpus !== 0) problems.push(`${e.name}: mini_batch_size (${mini * n}) must be divisible by the data-parallel size (${nGpus})`);
    const tp = num(`${A}.rollout.tensor_model_parallel_size`);
    if (nGpus % tp !== 0) problems.push(`${e.name}: n_gpus (${nGpus}) must be divisible by rollout.tensor_model_parallel_size (${tp})`);
    const models = [get(`${A}.model.path`), ...((get(`${A}.rollout.agent_model_paths`) as string[] | undefined) ?? [])];
    for (const m of new Set(models)) {
      const h = heads(m as string);
      if (h === null) problems.push(`${e.name}: no head count on record for model ${String(m)} (checks.json model_heads)`);
      else if (rn === 'vllm' && h % tp !== 0) problems.push(`${e.name}: vLLM: total number of attention heads (${h}) of ${String(m)} must be divisible by tensor parallel size (${tp})`);
    }
  }
  if (get(`${A}.rollout.val_kwargs.do_sample`) === true && !(num(`${A}.rollout.temperature`) > 0)) problems.push(`${e.name}: validation sampling needs temperature > 0`);
  const lora = num(`${A}.model.lora_rank`);
  if (lora > 0 && rn === 'vllm' && lora > Math.max(...CHECKS.verl.vllm_max_lora_ranks.options)) problems.push(`${e.name}: lora_rank ${lora} is above vLLM's largest (512)`);
  for (const k of ['data.train_batch_size', `${A}.rollout.n`, `${A}.actor.ppo_epochs`, 'trainer.total_training_steps']) if (!(Number.isInteger(num(k)) && num(k) >= 1)) problems.push(`${e.name}: ${k} must be a positive integer, got ${String(get(k))}`);
  for (const k of [`${A}.actor.clip_ratio_low`, `${A}.actor.clip_ratio_high`, `${A}.actor.optim.lr`]) if (!(num(k) > 0)) problems.push(`${e.name}: ${k} must be > 0, got ${String(get(k))}`);
  return problems;
}

const verlFamily: VerlFamily = {
  name: 'verl',
  keys: new Set(Object.keys(VERL_KEYS.keys)),
  defaults: VERL_KEYS.keys,
  plusKeys: new Set(),
  rolloutNames: CHECKS.verl['rollout.name'].options,
  lossAgg: CHECKS.verl.loss_agg_mode.options,
  lossModes: CHECKS.verl['policy_loss.loss_mode'].options,
};

/** Problems verl's config checks would find in these overrides (empty: it starts). */
export function checkVerl(lines: readonly string[]): string[] {
  return checkVerlFamily(verlFamily, lines);
}

/** TeamTR's keys: its packaged verl config, its own config files' keys, and the '+' keys its trainer reads. */
const teamtrFamily: VerlFamily = {
  name: 'TeamTR',
  keys: new Set([...Object.keys(TEAMTR_KEYS.keys), ...Object.keys(TEAMTR_ADDITIONS.in_config)]),
  defaults: TEAMTR_KEYS.keys,
  plusKeys: new Set(Object.keys(TEAMTR_ADDITIONS.plus_keys)),
  rolloutNames: TEAMTR_ADDITIONS.rollout_names.options,
  lossAgg: CHECKS.teamtr.loss_agg_mode.options,
  lossModes: CHECKS.teamtr['policy_loss.loss_mode'].options,
};

/** Problems TeamTR would find: verl's checks on its copy, plus its multi-agent requirements. */
export function checkTeamtr(lines: readonly string[], agents: number): string[] {
  // teamtr/configs/teamtr_base_full.yaml (the --config-name it is launched with) sets these.
  const base = { 'data.format': 'multi_agent_turn', 'actor_rollout_ref.rollout.name': 'multi_agent_hf', 'actor_rollout_ref.rollout.mode': 'sync', teamtr_router: 'random_batch' };
  const problems = checkVerlFamily(teamtrFamily, lines, base);
  const cfg = Object.fromEntries(readOverrides(lines, []).map((o) => [o.key, o.value]));
  const get = (k: string) => (k in cfg ? cfg[k] : (base as Record<string, unknown>)[k]);
  if (get('data.format') !== 'multi_agent_turn') problems.push('TeamTR: data.format must be multi_agent_turn for a team');
  const paths = get('actor_rollout_ref.rollout.agent_model_paths');
  if (!Array.isArray(paths) || paths.length !== agents) problems.push(`TeamTR: rollout.agent_model_paths must list the ${agents} agents, got ${JSON.stringify(paths)}`);
  if (!TEAMTR_ADDITIONS.in_config.teamtr_router.options.includes(get('teamtr_router'))) problems.push(`TeamTR: teamtr_router ${String(get('teamtr_router'))} is not random or random_batch`);
  return problems;
}

/** Problems the SAT authors' trainer would meet with this YAML text (empty: it starts and reads every key). */
export function checkSatTrainer(yamlText: string, files: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  const doc = parse(yamlText) as Record<string, unknown>;
  const keys = SAT_KEYS.keys as Record<string, { type: string; options?: unknown[]; min?: number; max?: number; exclusiveMin?: number; required?: boolean }>;
  const leaves: [string, unknown][] = [];
  const walk = (o: unknown, p: string) => {
    if (p === 'playground') return; // read only by the playground's Import
    if (p === 'sat.agents') {
      leaves.push([p, o]);
      if (Array.isArray(o)) o.forEach((a) => Object.entries(a as object).forEach(([k, v]) => leaves.push([`sat.agents[*].${k}`, v])));
      return;
    }
    if (o !== null && typeof o === 'object' && !Array.isArray(o)) for (const [k, v] of Object.entries(o)) walk(v, p ? `${p}.${k}` : k);
    else leaves.push([p, o]);
  };
  walk(doc, '');
  for (const [p, v] of leaves) {
    const spec = keys[p];
    if (!spec) {
      problems.push(`SAT trainer: ${p} is ${SAT_KEYS.never_read.includes(p) ? 'never read by its code' : 'not a key its code reads'}`);
      continue;
    }
    if (spec.type === 'enum' && !spec.options!.includes(v)) problems.push(`SAT trainer: ${p} = ${JSON.stringify(v)} is none of ${spec.options!.join(', ')}`);
    if (spec.type === 'int' && !Number.isInteger(v)) problems.push(`SAT trainer: ${p} must be an integer, got ${JSON.stringify(v)}`);
    if ((spec.type === 'float' || spec.type === 'int') && typeof v === 'number') {
      if (spec.min !== undefined && v < spec.min) problems.push(`SAT trainer: ${p} = ${v} is below ${spec.min}`);
      if (spec.max !== undefined && v > spec.max) problems.push(`SAT trainer: ${p} = ${v} is above ${spec.max}`);
      if (spec.exclusiveMin !== undefined && !(v > spec.exclusiveMin)) problems.push(`SAT trainer: ${p} = ${v} must be > ${spec.exclusiveMin}`);
    } else if ((spec.type === 'float' || spec.type === 'int') && typeof v !== 'number') problems.push(`SAT trainer: ${p} must be a number, got ${JSON.stringify(v)}`);
    if (spec.type === 'bool' && typeof v !== 'boolean') problems.push(`SAT trainer: ${p} must be true or false`);
    if (spec.type === 'str' && typeof v !== 'string') problems.push(`SAT trainer: ${p} must be text`);
  }
  const at = (p: string) => leaves.find(([k]) => k === p)?.[1];
  for (const [p, spec] of Object.entries(keys)) if (spec.required && at(p) === undefined) problems.push(`SAT trainer: ${p} is required`);
  if (doc.algorithm === undefined || (doc.algorithm as Record<string, unknown>).kl_ctrl === undefined) problems.push('SAT trainer: algorithm.kl_ctrl must exist (read with ["algorithm"]["kl_ctrl"])');
  const agents = at('sat.agents');
  if (!Array.isArray(agents) || agents.length === 0) problems.push('SAT trainer: No agents configured under `sat.agents`');
  else
    agents.forEach((a, i) => {
      const path = (a as { path?: unknown }).path;
      if (typeof path !== 'string' || /^tabular:/.test(path) || path === '') problems.push(`SAT trainer: sat.agents[${i}].path ${JSON.stringify(path)} is not a loadable model`);
    });
  const tb = at('data.train_batch_size') as number;
  const g = at('sat.group_size') as number;
  if (Math.floor(tb / g) < 1) problems.push(`SAT trainer: data.train_batch_size (${tb} episodes) gives no group of sat.group_size (${g})`);
  else if (tb % g !== 0) problems.push(`SAT trainer: data.train_batch_size (${tb}) is not a multiple of sat.group_size (${g}): ${tb % g} episodes would be dropped`);
  const train = at('dataset.train_path');
  if (typeof train === 'string' && !files.has(train)) problems.push(`SAT trainer: dataset.train_path ${train} is not among the exported files`);
  return problems;
}
