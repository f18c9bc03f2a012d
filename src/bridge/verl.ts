/**
 * The export to verl (`python3 -m verl.trainer.main_ppo`). verl's trainer holds one actor, so:
 *   - a chain team (`verlRunsTeam`) is trained agent by agent across verl runs: the exported
 *     stage driver (teamPy.ts, X.verl-team.py) runs one short verl run per stage and agent, in the
 *     update order, with the agent loop verl_team_loop.py playing the chain against teammates
 *     served from their current checkpoints;
 *   - any other language experiment is ONE GRPO run of agent 0's model, the single-policy baseline
 *     a team should beat.
 * Every key is one of verl's packaged config and the sizes pass its config checks
 * (tests/fixtures/bridge/verl.keys.json, checks.json). Where verl has no exact equivalent the
 * nearest is used and the recipe says so (see `verlExport`).
 *
 * Not here: the task's data (taskData.ts), the reward module (rewardPy.ts), the Python of the team
 * (teamPy.ts), the table for people (recipe.ts).
 */
import { isLlmTask, resolvedProtocol, type Config } from '../sat/config';
import { overridesOf, withDiffers, type Difference, type EngineExport, type Refusal } from './engine';
import { hfId, sizeOf, teamIds, type ModelMap } from './models';
import { DATA_FILES, responseTokens } from './taskData';
import { verlTeamDriverFile, verlTeamDriverModule, type VerlTeam } from './teamPy';

/** The longest prompt in tokens the exports allow: an instruction line, the problem and a chat template. */
export const PROMPT_TOKENS = 256;

/** Whether verl's export trains the whole team (a chain of several agents) rather than agent 0 alone. */
export function verlRunsTeam(cfg: Config): boolean {
  return isLlmTask(cfg.task) && cfg.agents > 1 && resolvedProtocol(cfg) === 'chain';
}

/**
 * Prompt tokens of a run: the instruction line and problem with a chat template, and in a chain the
 * earlier agents' messages (each a reply and its two markers) before the last agent's turn.
 */
export function promptTokens(cfg: Config): number {
  return verlRunsTeam(cfg) ? PROMPT_TOKENS + (cfg.agents - 1) * (responseTokens(cfg) + 16) : PROMPT_TOKENS;
}

/** The update order the stage driver runs every stage, or null for an order it cannot fix in advance. */
export function fixedOrder(cfg: Config): number[] | null {
  const all = Array.from({ length: cfg.agents }, (_, i) => i);
  if (cfg.order === 'fixed') return all;
  if (cfg.order === 'reverse') return all.reverse();
  if (cfg.order === 'custom') return [...cfg.customOrder];
  return null;
}

/** Where a run writes its generation dumps (`<step>.jsonl`: every episode's prompt, reply and score), which Import reads back (generations.ts). */
export function dumpKeys(name: string): [string, unknown][] {
  return [
    ['trainer.rollout_data_dir', `$PWD/${name}.generations/train`],
    ['trainer.validation_data_dir', `$PWD/${name}.generations/val`],
  ];
}

/** The file of verl's overrides, one per line (for a launcher of one's own), beside its script. */
export function verlOverridesFile(name: string): string {
  return `${name}.verl.txt`;
}

/** Largest divisor of n that is at most cap (a micro-batch that splits the mini-batch evenly). */
export function microBatch(n: number, cap = 8): number {
  for (let m = Math.min(n, cap); m > 1; m--) if (n % m === 0) return m;
  return 1;
}

/** verl's loss_agg_mode for our objective and token aggregation. */
export function lossAggMode(cfg: Config): string {
  if (cfg.objective === 'sequence') return 'seq-mean-token-mean';
  return { grpo: 'seq-mean-token-mean', bnpo: 'token-mean', dr_grpo: 'seq-mean-token-sum-norm' }[cfg.tokenAgg];
}

/** Refusals that every verl-based export shares. */
export function verlFamilyRefusals(cfg: Config, engine: string): Refusal[] {
  if (!isLlmTask(cfg.task)) return [{ setting: 'task', message: `"${cfg.task}" is a tabular game; ${engine} trains language models on text data.` }];
  const out: Refusal[] = [];
  if (cfg.norm === 'batch') out.push({ setting: 'norm', message: `norm batch (std over the whole batch) has no counterpart in ${engine} (algorithm.norm_adv_by_std_in_grpo divides by the group's std or not at all); set norm = group or none.` });
  if (cfg.swapAgent >= 0) out.push({ setting: 'swapAgent', message: `${engine} has no mid-run model swap; run two legs (before and after the swap) or use the SAT authors' trainer (sat.agents[*].upgrade).` });
  if (cfg.swapAgent >= 0 && cfg.swapTo === 'onnx') out.push({ setting: 'swapTo', message: `swapTo onnx: the seat's ONNX folder (the command line's --swap J=DIR) is an inference export; ${engine} trains and serves Hugging Face checkpoints (actor_rollout_ref.model.path), so even a second leg needs the checkpoint the ONNX folder was exported from, as swapTo = S, M or L.` });
  return out;
}

/** What verl and TeamTR run differently from the playground with `cfg` (their export still runs). */
export function verlFamilyDiffers(cfg: Config, engine: string, seqLoss: string): Difference[] {
  const out: Difference[] = [
    { setting: 'delta', message: `${engine} has no trust-region monitor: δ = ${cfg.delta} (and α, maxBacktracks) is not enforced, nothing is backtracked.` },
    { setting: 'aClip', message: `${engine} clips ratios, not advantages: A_clip = ${cfg.aClip} is not applied.` },
    { setting: 'maxNew', message: `a real tokenizer gets ${responseTokens(cfg)} response tokens for the playground's ${cfg.maxNew} characters.` },
  ];
  if (cfg.objective === 'sequence') out.push({ setting: 'objective', message: `the sequence-level ratio becomes ${engine}'s ${seqLoss}, which is length-normalised: the nearest, not the same.` });
  if (cfg.beta > 0 && !(cfg.objective === 'token' && cfg.tokenAgg === 'dr_grpo')) out.push({ setting: 'beta', message: `β = ${cfg.beta} weighs low_var_kl, a sampled estimate of the KL to the reference model, where the playground's is the exact per-state KL to π_cur.` });
  if (cfg.beta > 0 && cfg.objective === 'token' && cfg.tokenAgg === 'dr_grpo') out.push({ setting: 'beta', message: `dr_grpo is ${engine}'s DrGRPO, which has no KL loss (use_kl_loss=false): β = ${cfg.beta} is not applied.` });
  return out;
}

/** The GRPO actor / algorithm keys verl and TeamTR share, for a mini-batch of `mini` prompts. */
export function grpoKeys(cfg: Config, mini: number, lossMode: string): [string, unknown][] {
  const drGrpo = cfg.objective === 'token' && cfg.tokenAgg === 'dr_grpo';
  const m = microBatch(mini * cfg.group);
  return [
    ['algorithm.adv_estimator', 'grpo'],
    ['algorithm.norm_adv_by_std_in_grpo', !drGrpo && cfg.norm === 'group'],
    ['algorithm.use_kl_in_reward', false],
    ['actor_rollout_ref.actor.ppo_mini_batch_size', mini],
    ['actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu', m],
    ['actor_rollout_ref.actor.ppo_epochs', cfg.epochs],
    ['actor_rollout_ref.actor.clip_ratio_low', cfg.epsLow],
    ['actor_rollout_ref.actor.clip_ratio_high', cfg.epsHigh],
    ['actor_rollout_ref.actor.loss_agg_mode', lossAggMode(cfg)],
    ['actor_rollout_ref.actor.policy_loss.loss_mode', lossMode],
    ['actor_rollout_ref.actor.use_kl_loss', !drGrpo && cfg.beta > 0],
    ['actor_rollout_ref.actor.kl_loss_coef', cfg.beta],
    ['actor_rollout_ref.actor.kl_loss_type', 'low_var_kl'],
    ['actor_rollout_ref.actor.entropy_coeff', 0],
    ['actor_rollout_ref.actor.optim.lr', cfg.lr],
    ['actor_rollout_ref.actor.optim.weight_decay', cfg.weightDecay],
    ['actor_rollout_ref.rollout.n', cfg.group],
    ['actor_rollout_ref.rollout.temperature', cfg.temperature],
    ['actor_rollout_ref.rollout.tensor_model_parallel_size', 1],
    ['actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu', m],
    ['actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu', m],
    ['data.max_prompt_length', promptTokens(cfg)],
    ['data.max_response_length', responseTokens(cfg)],
    ['data.seed', cfg.seed],
    ['trainer.n_gpus_per_node', 1],
    ['trainer.nnodes', 1],
    ['trainer.total_training_steps', cfg.stages],
    ['trainer.test_freq', 1],
    ['trainer.val_before_train', true],
    ['trainer.logger', ['console', 'file']],
    ['trainer.project_name', 'sat-playground'],
  ];
}

/** The LoRA keys of the actor's model (rank 0 = full fine-tuning, written as verl's default). */
export function loraKeys(cfg: Config): [string, unknown][] {
  if (cfg.lora === 0) return [['actor_rollout_ref.model.lora_rank', 0]];
  return [
    ['actor_rollout_ref.model.lora_rank', cfg.lora],
    ['actor_rollout_ref.model.lora_alpha', cfg.loraAlpha],
    ['actor_rollout_ref.model.target_modules', 'all-linear'],
  ];
}

/** A shell script that runs `module` with the overrides, from the folder the recipe is in. */
export function runScript(title: string, env: readonly string[], head: string, overrides: readonly string[]): string {
  return ['#!/usr/bin/env bash', `# ${title}`, '# Exported by the SAT Playground ("Export for a real run"); docs/real-run.md walks through it.', 'set -euo pipefail', ...env, `${head} \\`, ...overrides.map((o, i) => `  "${o}"${i < overrides.length - 1 ? ' \\' : ''}`), ''].join('\n');
}

/**
 * The verl export of `cfg`: overrides, the command script and its file name, or refusals.
 * Sizes: rollout.name set (mandatory), actor / rollout / ref micro-batches set,
 * ppo_mini_batch_size = the batch (≤ data.train_batch_size), one GPU, vLLM tensor-parallel 1.
 * Nearest, not equal: our sequence-level ratio → loss_mode=gspo (GSPO's is length-normalised);
 * our exact per-state KL → kl_loss_type=low_var_kl (a sampled estimate). dr_grpo → verl's DrGRPO
 * (loss_agg_mode=seq-mean-token-sum-norm, use_kl_loss=false, norm_adv_by_std_in_grpo=false);
 * LoRA → model.lora_rank / lora_alpha / target_modules=all-linear, load_format=safetensors.
 * A chain team: the same overrides are the base of every run of the stage driver, whose script
 * (X.verl-team.py beside the script) replaces the per-run keys; its order must be known in advance.
 * `notMapped`: the settings the recipe's table does not map, listed last under "runs differently".
 */
export function verlExport(cfg: Config, models: ModelMap, dataDir: string, name: string, scriptFile: string, notMapped: readonly Difference[] = []): EngineExport {
  const refused = verlFamilyRefusals(cfg, 'verl');
  const team = verlRunsTeam(cfg);
  const order = fixedOrder(cfg);
  if (team && cfg.lora > 0) refused.push({ setting: 'lora', message: `lora ${cfg.lora}: verl trains the chain one agent per run (X.verl-team.py) and merges each run's checkpoint into the next run's model, but verl's model merger writes a LoRA adapter apart from the base weights (verl/model_merger/base_model_merger.py:311 save_lora_adapter), which the next run would not load; set lora = 0 for verl, or use TeamTR's export.` });
  if (team && order === null) refused.push({ setting: 'order', message: `order ${cfg.order}: verl trains the chain one agent per run (verl_team.py), in an order written into the export (X.verl-team.py); set order = fixed, reverse or custom.` });
  if (refused.length > 0) return { ok: false, engine: 'verl', refused };
  const pairs: [string, unknown][] = [
    ['data.train_files', `$DATA/${DATA_FILES.verlTrain}`],
    ['data.val_files', `$DATA/${DATA_FILES.verlVal}`],
    ['data.train_batch_size', cfg.batch],
    ['data.filter_overlong_prompts', true],
    ['actor_rollout_ref.model.path', hfId(models, sizeOf(cfg, 0))],
    ...loraKeys(cfg),
    ...(cfg.lora > 0 ? ([['actor_rollout_ref.rollout.load_format', 'safetensors']] as [string, unknown][]) : []),
    ['actor_rollout_ref.rollout.name', 'vllm'],
    ['actor_rollout_ref.rollout.top_k', cfg.topK === 0 ? -1 : cfg.topK],
    ...grpoKeys(cfg, cfg.batch, cfg.objective === 'sequence' ? 'gspo' : 'vanilla'),
    ['reward.custom_reward_function.path', `$DATA/${DATA_FILES.reward}`],
    ['reward.custom_reward_function.name', 'compute_score'],
    ['trainer.experiment_name', name],
    ...dumpKeys(name),
  ];
  const overrides = overridesOf(pairs);
  const env = [`DATA="$(cd "$(dirname "$0")" && pwd)/${dataDir}"`, `export VERL_FILE_LOGGER_PATH="\${VERL_FILE_LOGGER_PATH:-$PWD/${name}.verl-log.jsonl}"`];
  const shared = verlFamilyDiffers(cfg, 'verl', 'gspo');
  if (team) {
    const spec: VerlTeam = { name, agents: cfg.agents, stages: cfg.stages, batch: cfg.batch, order: order!, models: teamIds(cfg, models), overrides, maxModelLen: promptTokens(cfg) + responseTokens(cfg), dataDir, trainFile: DATA_FILES.verlTrain };
    const text = ['#!/usr/bin/env bash', `# verl: the ${cfg.agents}-agent chain of ${name}, one verl run per stage and agent (${cfg.stages * cfg.agents} runs); needs verl, vLLM and one GPU.`, '# Exported by the SAT Playground ("Export for a real run"); docs/real-run.md walks through it.', 'set -euo pipefail', `exec python3 "$(dirname "$0")/${verlTeamDriverFile(name)}" "$@"`, ''].join('\n');
    const differs = [
      ...shared,
      { setting: 'agents' as const, message: `verl holds one actor: each of the ${cfg.stages * cfg.agents} runs trains one agent for one step on its stage's problems while the others answer from vLLM servers of their current checkpoints; each run restarts verl (its optimizer state is not carried from one run to the next).` },
      ...(cfg.scheme === 'simultaneous' ? [{ setting: 'scheme' as const, message: 'the driver updates the agents one after another (sequential); simultaneous has no counterpart.' }] : []),
      ...(cfg.estimator !== 'resample' ? [{ setting: 'estimator' as const, message: `each agent's run plays fresh episodes after its predecessors' updates (the playground's resample), where the playground's estimator is ${cfg.estimator}.` }] : []),
      ...notMapped,
    ];
    const files = [
      { path: scriptFile, text: withDiffers(text, differs) },
      { path: verlOverridesFile(name), text: `${overrides.join('\n')}\n` },
      { path: verlTeamDriverFile(name), text: verlTeamDriverModule(spec) },
    ];
    return { ok: true, engine: 'verl', overrides, command: `bash ${scriptFile}`, files, differs };
  }
  const text = runScript(`verl: one GRPO run of agent 0's model (the single-policy baseline of ${name}); needs verl and one GPU.`, env, 'python3 -m verl.trainer.main_ppo', overrides);
  const differs = [...shared, { setting: 'agents' as const, message: `verl trains one policy: agent 0's model alone (${cfg.agents} agents in the playground); TeamTR's export runs the team.` }, ...notMapped];
  const files = [{ path: scriptFile, text: withDiffers(text, differs) }, { path: verlOverridesFile(name), text: `${overrides.join('\n')}\n` }];
  return { ok: true, engine: 'verl', overrides, command: `bash ${scriptFile}`, files, differs };
}
