/**
 * The task as data for a real run: the playground's own problems (same generator, seed, level and
 * split) as each engine's dataset rows, one JSON object a line — verl's RLHFDataset
 * (verl/utils/dataset/rl_dataset.py), TeamTR's MultiAgentTurnDataset
 * (verl/utils/dataset/multi_agent_dataset.py) and the SAT authors' `_load_dapo_dataset`
 * (sat/real_controller.py: { prompt, chosen }). The ground truth is the verifier's input, not an
 * answer ("46"; countdown's "3,5,7>22"), and the prompt gets one instruction line
 * (`INSTRUCTIONS`), since a real instruct model must be told the answer format.
 *
 * Not here: the problems (src/tasks/llm), the reward function (rewardPy.ts), the engines' configs.
 */
import { LLM_TASKS, type LlmTaskName, type Problem } from '../tasks/llm/index';
import { isLlmTask, resolvedProtocol, type Config } from '../sat/config';
import type { RewardMode } from './answer';

/** What every dataset row's data_source says: the reward module dispatches on it. */
export function dataSource(task: LlmTaskName): string {
  return `sat-playground/${task}`;
}

/**
 * The line put before each prompt: the answer format the exported reward reads, in words — the
 * bare answer (rewardMode strict) or a worked reply ending in \boxed{…} (extract, answer.ts).
 */
export const INSTRUCTIONS: Readonly<Record<RewardMode, Readonly<Record<LlmTaskName, string>>>> = {
  strict: {
    arithmetic: 'Reply with the integer result only, no words.',
    countdown: 'Reply with one expression only: the given numbers (each at most once), + - * and parentheses, equal to the number after ">".',
  },
  extract: {
    arithmetic: 'Work out the result, then give the final integer as \\boxed{N}.',
    countdown: 'Write one expression using the given numbers (each at most once), + - * and parentheses, equal to the number after ">"; give it last as \\boxed{expression}.',
  },
};

/** The files of the task's data, relative to the data folder. */
export const DATA_FILES = {
  verlTrain: 'train.verl.jsonl',
  verlVal: 'val.verl.jsonl',
  teamtrTrain: 'train.teamtr.jsonl',
  teamtrVal: 'val.teamtr.jsonl',
  satTrain: 'train.sat.jsonl',
  satTest: 'test.sat.jsonl',
  reward: 'reward.py',
} as const;

/** The verifier's input for a problem (the dataset's ground_truth). */
export function groundTruth(task: LlmTaskName, p: Problem): string {
  if (task === 'arithmetic') return String(p.meta.value);
  return `${(p.meta.numbers as readonly number[]).join(',')}>${p.meta.target}`;
}

/** The text the model is shown for a problem. */
export function promptText(task: LlmTaskName, p: Problem, mode: RewardMode = 'strict'): string {
  return `${INSTRUCTIONS[mode][task]}\n${p.prompt}`;
}

/** Response tokens an instruct model gets for a bare answer ("The answer is 16." included) and for a worked one. */
export const RESPONSE_TOKENS: Readonly<Record<RewardMode, number>> = { strict: 64, extract: 256 };

/**
 * Tokens of a real tokenizer per message (the engines' max_response_length): the playground's
 * budget counts characters of a char-level model, which says little about a real tokenizer and an
 * instruct model's words, so the larger of 4 × maxNew and RESPONSE_TOKENS of the reward mode.
 */
export function responseTokens(cfg: Config): number {
  return Math.max(RESPONSE_TOKENS[cfg.rewardMode], 4 * cfg.maxNew);
}

/** How many problems each file holds: a stage's batch for every stage, and the evaluation set. */
export function dataSizes(cfg: Config): { train: number; val: number } {
  return { train: Math.min(cfg.stages * cfg.batch, 200_000), val: cfg.evalEpisodes };
}

/** The train (indices 0..) and held-out (indices 0.., what J is measured on) problems. */
export function problemsOf(cfg: Config): { train: Problem[]; val: Problem[] } {
  if (!isLlmTask(cfg.task)) return { train: [], val: [] };
  const task = LLM_TASKS[cfg.task].make({ seed: cfg.taskSeed, level: cfg.level, formatReward: cfg.formatReward });
  const n = dataSizes(cfg);
  return {
    train: Array.from({ length: n.train }, (_, i) => task.generate('train', i)),
    val: Array.from({ length: n.val }, (_, i) => task.generate('heldout', i)),
  };
}

const lines = (rows: readonly unknown[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

/** verl's row: data_source, prompt as chat, ability, reward_model (rule, ground_truth), extra_info. */
function verlRow(task: LlmTaskName, p: Problem, level: number, mode: RewardMode) {
  return {
    data_source: dataSource(task),
    prompt: [{ role: 'user', content: promptText(task, p, mode) }],
    ability: task,
    reward_model: { style: 'rule', ground_truth: groundTruth(task, p) },
    extra_info: { split: p.split, index: p.index, task, level, prompt: p.prompt },
  };
}

/** verl's RLHF dataset rows (JSONL). */
export function verlRows(cfg: Config, problems: readonly Problem[]): string {
  const task = cfg.task as LlmTaskName;
  return lines(problems.map((p) => verlRow(task, p, cfg.level, cfg.rewardMode)));
}

/**
 * TeamTR's multi_agent_turn rows: every problem once per agent, agent 0's row first. With a
 * `context` column (the problem's prompt, plain text) the rows are used as they are; the exported
 * rollout (teamPy.ts) builds each agent's real context from it — alone (independent) or after the
 * episode's earlier messages (chain: turn_id = the agent's turn, conversation_id = the problem) —
 * and renders the agent's chat template. data_source / reward_model / extra_info reach reward.py.
 */
export function teamtrRows(cfg: Config, problems: readonly Problem[]): string {
  const task = cfg.task as LlmTaskName;
  const chain = resolvedProtocol(cfg) === 'chain';
  const rows = problems.flatMap((p, c) =>
    Array.from({ length: cfg.agents }, (_, a) => {
      const v = verlRow(task, p, cfg.level, cfg.rewardMode);
      return { context: promptText(task, p, cfg.rewardMode), response: '', agent_id: a, turn_id: chain ? a : 0, conversation_id: chain ? c : c * cfg.agents + a, data_source: v.data_source, reward_model: v.reward_model, extra_info: v.extra_info };
    }),
  );
  return lines(rows);
}

/**
 * The SAT authors' trainer rows: training rows are { prompt, chosen } (the reference answer), the
 * test rows its plug_and_play.py reads are { problem, answer } (sat/real_controller.py).
 */
export function satRows(cfg: Config, problems: readonly Problem[], split: 'train' | 'test'): string {
  const task = cfg.task as LlmTaskName;
  const text = (p: Problem) => promptText(task, p, cfg.rewardMode);
  return lines(problems.map((p) => (split === 'train' ? { prompt: text(p), chosen: p.answer } : { problem: text(p), answer: p.answer })));
}
