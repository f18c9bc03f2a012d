/**
 * The export to TeamTR (Yydc/TeamTR: verl extended to teams): ONE run of the whole team —
 * `rollout.name=multi_agent_hf` loads one model per `rollout.agent_model_paths` entry,
 * `data.format=multi_agent_turn` rows carry their agent_id, and each training step updates the
 * agents in increasing id order, each on its own rows (metrics prefixed agent{i}/). Launched from
 * its own configs (`--config-name teamtr_homo_full`), whose keys it adds to verl's. The rollout
 * itself is ours (teamPy.ts, put in place by the exported sitecustomize.py): it plays the
 * independent or the chain protocol across the agents and renders each agent's chat template.
 *
 * Not here: the dataset rows (taskData.ts), the shared GRPO keys (verl.ts), the Python (teamPy.ts).
 */
import { resolvedProtocol, type Config } from '../sat/config';
import { overridesOf, withDiffers, type Difference, type EngineExport, type Refusal } from './engine';
import { hfId, sizeOf, teamIds, type ModelMap } from './models';
import { DATA_FILES } from './taskData';
import { TEAM_PROTOCOLS, type TeamProtocol } from './teamPy';
import { dumpKeys, grpoKeys, loraKeys, runScript, verlFamilyDiffers, verlFamilyRefusals } from './verl';

/**
 * What TeamTR cannot run of `cfg`. The exported rollout plays independent (each row answered by
 * its agent alone) and chain (agent j sees agents 0..j−1's messages of the same episode); vote
 * and router are refused, as is any order but 0..n−1. Its verl has no gspo: our sequence-level
 * ratio maps to geo_mean (GMPO's geometric-mean ratio, the nearest, not the same).
 */
export function teamtrRefusals(cfg: Config): Refusal[] {
  const out = verlFamilyRefusals(cfg, 'TeamTR');
  if (out.some((r) => r.setting === 'task')) return out;
  const protocol = resolvedProtocol(cfg);
  if (!(TEAM_PROTOCOLS as readonly string[]).includes(protocol)) out.push({ setting: 'protocol', message: `protocol ${protocol}: the exported TeamTR rollout (teamtr_rollout.py) plays ${TEAM_PROTOCOLS.join(' and ')}, one row per agent and problem; ${protocol} needs a row layout it does not have. Set protocol = chain or independent to export.` });
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
    ...dumpKeys(name),
  ];
  const overrides = overridesOf(pairs);
  const env = [
    'TEAMTR="${TEAMTR:?set TEAMTR to your clone of https://github.com/Yydc/TeamTR}"',
    `DATA="$(cd "$(dirname "$0")" && pwd)/${dataDir}"`,
    `export VERL_FILE_LOGGER_PATH="\${VERL_FILE_LOGGER_PATH:-$PWD/${name}.teamtr-log.jsonl}"`,
    '# $DATA first: its sitecustomize.py puts the exported protocol rollout (teamtr_rollout.py) in place of TeamTR\'s multi_agent_hf rollout in every process.',
    'export PYTHONPATH="$DATA:$TEAMTR${PYTHONPATH:+:$PYTHONPATH}"',
  ];
  const text = runScript(`TeamTR: one run of the ${cfg.agents}-agent team of ${name}, agents updated in turn every step; needs TeamTR's environment and one GPU.`, env, 'python3 -m verl.trainer.main_ppo --config-path "$TEAMTR/teamtr/configs" --config-name teamtr_homo_full', overrides);
  const chain = (resolvedProtocol(cfg) as TeamProtocol) === 'chain';
  const differs = [
    ...verlFamilyDiffers(cfg, 'TeamTR', 'geo_mean'),
    chain
      ? { setting: 'estimator' as const, message: `every agent is updated from the same step's ${cfg.batch * cfg.group} episodes, one after another in id order; a later agent's advantages are not re-estimated after its predecessors' updates (no fresh episodes, no importance weights), where the playground's estimator is ${cfg.estimator}.` }
      : { setting: 'group' as const, message: `each agent samples ${cfg.group} answers per prompt with its own group baseline (${cfg.group * cfg.agents} a prompt in all), where the playground's group of ${cfg.group} is shared: sample k answered by agent k mod ${cfg.agents}.` },
    ...notMapped,
  ];
  return { ok: true, engine: 'teamtr', overrides, command: `TEAMTR=/path/to/TeamTR bash ${scriptFile}`, files: [{ path: scriptFile, text: withDiffers(text, differs) }], differs };
}
