/**
 * What the page, the CLI and the workers need to know about a checkpoint seat before any model is
 * built: the context the preset needs with its tokenizer, the memory budget, the swap refusal and
 * the LoRA seed. Model-free, so the page can check a folder without loading the model code.
 *
 * Not here: the agent on a loaded checkpoint (hfSeat.ts).
 */
import { ConfigError } from '../core/errors';
import { Rng } from '../core/rng';
import type { TextTokenizer } from '../model/tokenizer';
import { makeLlmTask } from '../tasks/llm/index';
import { nextTurn, type Message } from '../tasks/llm/protocols';
import { resolvedProtocol, type Config } from './config';
/** LoRA rank of a seated checkpoint when the `lora` setting is 0 (full training of a 100M model is not offered). */
export const HF_DEFAULT_LORA_RANK = 8;

/**
 * Context a checkpoint is read with before the preset's own is measured (positions): what the
 * page's config-only checks and stored copies use, and the default of `hfSeatBudget`.
 */
export const HF_SEAT_MAX_SEQ = 128;

/** The longest context a seat is given whatever the preset needs (positions): the attention's memory grows with its square. */
export const HF_SEAT_MAX_CONTEXT = 1024;

/**
 * Named budgets: settings laid over a language preset's own (the CLI's `--budget NAME`, the page's
 * "real-size budget" button under Language models), each key a row of the config table.
 * `real-size` keeps one stage of a three-seat chain on 135M-class checkpoints (SmolLM2-135M's
 * shape) within about three minutes on a 2-core machine: 2 prompts × 4 samples a batch, one epoch,
 * no geometry (the κ/λ diagnostics cost Fisher products over 135M parameters), 16 held-out
 * episodes for J and 8 certification episodes per agent (24 for the team). The certificate is
 * correspondingly loose: with 24 units its lower bound sits at least 0.15 (reward units) below the
 * estimate, against 0.005 at the default 768 (docs/models.md "A real-size team").
 */
export const BUDGETS = {
  'real-size': { batch: 2, group: 4, epochs: 1, geoIters: 0, evalEpisodes: 16, certEpisodes: 8 },
} as const satisfies Record<string, Partial<Record<keyof Config, number>>>;

export type BudgetName = keyof typeof BUDGETS;

/** Problems of each split (train, held-out) whose contexts `hfSeatContext` measures. */
const CONTEXT_PROBES = 96;

/**
 * Tokens an earlier message of maxNew tokens is counted as, per token: a message is decoded to text
 * and encoded again by the reader's tokenizer, which can take more tokens than it was sampled with
 * — a byte token outside UTF-8 decodes to U+FFFD, three bytes (tests/hf-context.test.ts: a random
 * checkpoint's 32-token messages took up to 1.4× in a 4-agent chain); a char-tokenizer teammate's
 * message (at most maxNew ASCII characters) takes at most maxNew.
 */
const EARLIER_MESSAGE_TOKENS = 2;

/** Settings the context depends on. */
export type HfContextSettings = Pick<Config, 'task' | 'taskSeed' | 'level' | 'formatReward' | 'protocol' | 'agents' | 'maxNew'>;

/**
 * The context (positions) a seat needs for these settings, with this tokenizer: over the task's
 * first CONTEXT_PROBES problems of each split and every seat of the protocol, the context as the
 * tokenizer encodes it (chat template, "agent i:" lines) with each earlier message it sees counted
 * as EARLIER_MESSAGE_TOKENS × maxNew tokens (they are empty in the probe), plus maxNew for its own
 * message; then 8 tokens of slack, rounded up to a multiple of 16. Refused (ConfigError "context",
 * naming the need and the limit) when it is longer than the checkpoint's max_position_embeddings
 * or HF_SEAT_MAX_CONTEXT. It is a measurement, not a proof: a context past it is refused by the
 * agent, naming it (HfSeatAgent below).
 */
export function hfSeatContext(cfg: HfContextSettings, tk: TextTokenizer, maxPositions: number): number {
  const task = makeLlmTask(cfg.task as Parameters<typeof makeLlmTask>[0], { seed: cfg.taskSeed, level: cfg.level, formatReward: cfg.formatReward });
  const protocol = resolvedProtocol(cfg as Config);
  let need = 0;
  const lengths = new Map<string, number>(); // contexts repeat across samples (a chain's seats are the same for every sample)
  const encoded = (context: string): number => lengths.get(context) ?? lengths.set(context, tk.encodeContext(context).length).get(context)!;
  for (const split of ['train', 'heldout'] as const) {
    for (let i = 0; i < CONTEXT_PROBES; i++) {
      const problem = task.generate(split, i);
      for (let sample = 0; sample < cfg.agents; sample++) {
        const spec = { protocol, nAgents: cfg.agents, sample };
        const messages: Message[] = [];
        for (let slots = nextTurn(spec, problem, messages); slots.length > 0; slots = nextTurn(spec, problem, messages)) {
          for (const slot of slots) {
            const seen = protocol === 'chain' ? messages.filter((m) => m.turn < slot.turn).length : 0;
            need = Math.max(need, encoded(slot.context) + (EARLIER_MESSAGE_TOKENS * seen + 1) * cfg.maxNew);
          }
          for (const slot of slots) messages.push({ turn: slot.turn, agent: slot.agent, text: '' });
        }
      }
    }
  }
  const limit = Math.min(maxPositions, HF_SEAT_MAX_CONTEXT);
  if (need > limit) {
    const why = maxPositions <= HF_SEAT_MAX_CONTEXT ? `the checkpoint's max_position_embeddings = ${maxPositions}` : `a seat's most, HF_SEAT_MAX_CONTEXT = ${HF_SEAT_MAX_CONTEXT}`;
    throw new ConfigError(
      'context',
      need,
      `This preset needs contexts of up to ${need} tokens for a checkpoint seat (the ${cfg.task} prompt and the earlier agents' messages as its tokenizer encodes them, plus maxNew = ${cfg.maxNew} for its own message), longer than ${why}; lower maxNew or the number of agents in the chain.`,
    );
  }
  return Math.min(limit, 16 * Math.ceil((need + 8) / 16));
}

/** What the memory estimate of a seated checkpoint counts, for these settings. */
export interface HfSeatBudget {
  readonly loraRank: number;
  readonly sequences: number;
  readonly seqLen: number;
  readonly prompts: number;
}

/** The budget for settings `cfg` with contexts of `seqLen` tokens (hfSeatContext's; HF_SEAT_MAX_SEQ before it is measured). */
export function hfSeatBudget(cfg: Pick<Config, 'lora' | 'batch' | 'group' | 'evalEpisodes'>, seqLen: number = HF_SEAT_MAX_SEQ): HfSeatBudget {
  // One training pass packs the agent's batch × group messages, each at most seqLen tokens.
  // Sampling: a rollout's batch × group prompts, or an evaluation's evalEpisodes, at once.
  return { loraRank: cfg.lora > 0 ? cfg.lora : HF_DEFAULT_LORA_RANK, sequences: cfg.batch * cfg.group, seqLen, prompts: Math.max(cfg.batch * cfg.group, cfg.evalEpisodes) };
}

/**
 * Why the configured plug-and-play swap cannot run with agent j on checkpoint `name` (null when
 * swapAgent is another agent or −1). A swap distils the team's token states from the outgoing seat
 * into a shipped model and projects it by Stage-0 (src/sat/lmSwap.ts), which assumes both speak the
 * shipped models' 64-token vocabulary; a checkpoint's tokenizer is another, so neither swapping a
 * checkpoint out nor a checkpoint in is offered yet (docs/models.md "Not yet").
 */
export function hfSwapRefusal(cfg: Pick<Config, 'swapAgent' | 'swapAt' | 'swapTo'>, j: number, name: string): string | null {
  if (cfg.swapAgent !== j || cfg.swapTo === 'onnx') return null; // an ONNX target is checked against the seat's tokenizer instead (onnxSeat.ts)
  return `The configured plug-and-play swap (swapAgent = ${j}, at stage ${cfg.swapAt}, to ${cfg.swapTo}) would replace agent ${j}, which holds checkpoint ${name}: swapping a checkpoint seat is not supported yet (a swap distils and projects between models of the shipped 64-token vocabulary; a checkpoint's tokenizer is another). Set swapAgent to another agent or −1, or put agent ${j} back on the shipped model.`;
}

/** Seed of agent j's LoRA initialisation on a seated checkpoint (the run seed's fork "hf", j). */
export function hfSeatSeed(runSeed: number, j: number): number {
  return new Rng(runSeed, [0x6866, j]).nextU32();
}
