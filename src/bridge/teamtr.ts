/**
 * The export to TeamTR (Yydc/TeamTR: verl extended to teams): ONE run of the whole team —
 * `rollout.name=multi_agent_hf` loads one model per `rollout.agent_model_paths` entry,
 * `data.format=multi_agent_turn` rows carry their agent_id, and each training step updates the
 * agents in increasing id order, each on its own rows (metrics prefixed agent{i}/). Launched from
 * its own configs (`--config-name teamtr_homo_full`), whose keys it adds to verl's.
 *
 * Not here: the dataset rows (taskData.ts), the shared GRPO keys (verl.ts).
 */
import { resolvedProtocol, type Config } from '../sat/config';
import { overridesOf, withDiffers, type Difference, type EngineExport, type Refusal } from './engine';
import { hfId, sizeOf, teamIds, type ModelMap } from './models';
import { DATA_FILES } from './taskData';
import { grpoKeys, loraKeys, runScript, verlFamilyDiffers, verlFamilyRefusals } from './verl';

/**
 * What TeamTR cannot run of `cfg`. Each row is answered by its agent alone (the independent
 * protocol, where resampling and reuse coincide); chain, vote and router need teammates' live
 * messages and are refused, as is any order but 0..n−1. Its verl has no gspo: our sequence-level
 * ratio maps to geo_mean (GMPO's geometric-mean ratio, the nearest, not the same).
 */
export function teamtrRefusals(cfg: Config): Refusal[] {
  const out = verlFamilyRefusals(cfg, 'TeamTR');
  if (out.some((r) => r.setting === 'task')) return out;
  const protocol = resolvedProtocol(cfg);
  if (protocol !== 'independent') out.push({ setting: 'protocol', message: `protocol ${protocol}: TeamTR's rows are answered by one agent each from a prompt in the data, so teammates' live messages cannot reach a later agent; set protocol = independent to export.` });
  if (cfg.order !== 'fixed') out.push({ setting: 'order', message: `order ${cfg.order}: TeamTR updates the agents in increasing id order every step (verl/workers/fsdp_workers.py update_actor); set order = fixed.` });
  return out;
}

/** The TeamTR export of `cfg`, or refusals; `notMapped` as in verlExport. */
export function teamtrExport(cfg: Config, models: ModelMap, dataDir: string, name: string, scriptFile: string, notMapped: readonly Difference[] = []): EngineExport {
  const refused = teamtrRefusals(cfg);
  if (refused.length > 0) return { ok: false, engine: 'teamtr', refused };
  const rows = cfg.batch * cfg.agents;
  const pairs: [string, unknown][] = [
    ['hydra.searchpath', ['file://$TEAMTR/verl/trainer/config']],
    ['data.format', 'multi_agent_turn'],
    ['data.train_files', [`$DATA/${DATA_FILES.teamtrTrain}`]],
    ['data.val_files', [`$DATA/${DATA_FILES.teamtrVal}`]],
    ['data.train_batch_size', rows],
    // rows in file order: each step's rows are `batch` problems, each once per agent (the file lists every problem's agents together)
    ['data.shuffle', false],
    ['actor_rollout_ref.model.path', hfId(models, sizeOf(cfg, 0))],
    ['actor_rollout_ref.rollout.agent_model_paths', teamIds(cfg, models)],
    ['actor_rollout_ref.rollout.name', 'multi_agent_hf'],
    ['actor_rollout_ref.rollout.top_k', cfg.topK],
    ...loraKeys(cfg),
    ...grpoKeys(cfg, rows, cfg.objective === 'sequence' ? 'geo_mean' : 'vanilla'),
    ['custom_reward_function.path', `$DATA/${DATA_FILES.reward}`],
    ['custom_reward_function.name', 'compute_score'],
    ['teamtr_router_seed', cfg.seed],
    ['trainer.experiment_name', name],
    ['trainer.default_local_dir', `checkpoints/${name}`],
  ];
  const overrides = overridesOf(pairs);
  const env = [
    'TEAMTR="${TEAMTR:?set TEAMTR to your clone of https://github.com/Yydc/TeamTR}"',
    `DATA="$(cd "$(dirname "$0")" && pwd)/${dataDir}"`,
    `export VERL_FILE_LOGGER_PATH="\${VERL_FILE_LOGGER_PATH:-$PWD/${name}.teamtr-log.jsonl}"`,
    'export PYTHONPATH="$TEAMTR${PYTHONPATH:+:$PYTHONPATH}"',
  ];
  const text = runScript(`TeamTR: one run of the ${cfg.agents}-agent team of ${name}, agents updated in turn every step; needs TeamTR's environment and one GPU.`, env, 'python3 -m verl.trainer.main_ppo --config-path "$TEAMTR/teamtr/configs" --config-name teamtr_homo_full', overrides);
  const differs = [
    ...verlFamilyDiffers(cfg, 'TeamTR', 'geo_mean'),
    { setting: 'group' as const, message: `each agent samples ${cfg.group} answers per prompt with its own group baseline (${cfg.group * cfg.agents} a prompt in all), where the playground's group of ${cfg.group} is shared: sample k answered by agent k mod ${cfg.agents}.` },
    ...notMapped,
  ];
  return { ok: true, engine: 'teamtr', overrides, command: `TEAMTR=/path/to/TeamTR bash ${scriptFile}`, files: [{ path: scriptFile, text: withDiffers(text, differs) }], differs };
}
