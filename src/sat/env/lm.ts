/**
 * The environment of a language-model team (the `TeamEnv` of types.ts): it runs the LLM protocols
 * (src/tasks/llm/protocols.ts) on a verifiable text task, turn by turn, asking each agent
 * (`LmAgentPolicy`, src/sat/agents/lm.ts) for its messages, and builds the batch's token-state
 * table (`LmSteps`): one sequence per message, one step per message token (+ EOS), with log π_cur
 * of every step from each agent's own full forward pass (so ratios start at exactly 1).
 *
 * Each agent's context is encoded, and its message decoded, by the agent's own tokenizer
 * (`LmAgentPolicy.tokenizer`: a loaded checkpoint's, src/model/hfTokenizer.ts; else the char
 * tokenizer), and its message ends at that tokenizer's end token — so a team may mix vocabularies:
 * every token sequence in the batch belongs to the one agent that wrote it and is scored by it.
 *
 * Not here: the agents (src/sat/agents), the model (src/model) or the protocols' text (src/tasks/llm).
 */
import { Rng } from '../../core/rng';
import { meanCI } from '../../core/stats';
import { tokenizer as charTokenizer, type TextTokenizer } from '../../model/tokenizer';
import { nextTurn, protocolHorizon, teamVerdict, type Message, type TeamSpec } from '../../tasks/llm/protocols';
import type { LlmTask, Problem } from '../../tasks/llm/types';
import type { LmAgentPolicy, LmSteps } from '../agents/lm';
import type { CertScope } from '../certificate';
import type { AgentPolicy, AgentTurn, Batch, Episode } from '../types';
import type { RolloutOptions, TeamEnv, TeamEvaluation } from './types';

export interface LmEnvOptions {
  /** Most tokens per message (the end-of-message token included). */
  readonly maxNew: number;
  /** Held-out problems behind each evaluation of J. */
  readonly evalEpisodes: number;
  /** Seed of the evaluation's sampling (fixed, so successive evaluations share random numbers). */
  readonly evalSeed: number;
}

/** A message being written: who, at which turn, its context and its tokens. */
interface Written {
  readonly agent: number;
  readonly turn: number;
  readonly context: Int32Array;
  readonly tokens: Int32Array;
  readonly stopped: boolean;
}

/** One finished episode with its messages and grade, for transcripts. */
export interface LmEpisodeRecord {
  readonly problem: Problem;
  readonly sample: number;
  readonly messages: readonly Message[];
  readonly reward: number;
  readonly correct: boolean;
}

/** The tokenizer an agent speaks with (the char tokenizer unless it brings its own). */
function tokenizerOf(agent: AgentPolicy): TextTokenizer {
  return (agent as LmAgentPolicy).tokenizer ?? charTokenizer;
}

export class LmEnv implements TeamEnv {
  readonly task: LlmTask;
  /** Held-out evaluation costs episodes: the stage loop evaluates only at stage ends. */
  readonly evaluatePerAgent = false;
  readonly nAgents: number;
  readonly protocol: TeamSpec['protocol'];
  readonly opts: LmEnvOptions;
  /** The episodes of the last rollout, for transcripts. */
  lastEpisodes: LmEpisodeRecord[] = [];
  /** The team-level certificate (docs/certificate.md §5b): the per-agent one cannot certify a language team's small gains. */
  certScope: CertScope = 'team';
  /** CRN pairs of each stage's check of its bound (heldCheck.ts); 0: unchecked. */
  heldPairs = 0;

  constructor(task: LlmTask, protocol: TeamSpec['protocol'], nAgents: number, opts: LmEnvOptions) {
    this.task = task;
    this.protocol = protocol;
    this.nAgents = nAgents;
    this.opts = opts;
  }

  /** Horizon in token steps: turns × tokens per message (the per-state KL lives on tokens). */
  get horizon(): number {
    return protocolHorizon({ protocol: this.protocol, nAgents: this.nAgents }) * this.opts.maxNew;
  }

  get rewardRange(): readonly [number, number] {
    return this.task.rewardRange;
  }

  /** `independent`: sample k of a group is answered by agent k mod n, so a unit holds one per agent. */
  get slots(): number {
    return this.protocol === 'independent' ? this.nAgents : 1;
  }

  /** Every protocol lets an agent speak at most once per episode (a turn is one whole message). */
  agentTurns(_agent: number): number {
    return 1;
  }

  /** A message has at most maxNew token steps (its end-of-message token included). */
  get stepsPerTurn(): number {
    return this.opts.maxNew;
  }

  /** Plays `problems[i]` once each (sample index `samples[i]`), all episodes advancing turn by turn. */
  private async play(team: readonly AgentPolicy[], problems: readonly Problem[], samples: readonly number[], rng: Rng): Promise<{ written: Written[][]; messages: Message[][] }> {
    const E = problems.length;
    const messages: Message[][] = problems.map(() => []);
    const written: Written[][] = problems.map(() => []);
    for (let round = 0; ; round++) {
      const due: { e: number; agent: number; turn: number; context: Int32Array }[] = [];
      for (let e = 0; e < E; e++) {
        const spec: TeamSpec = { protocol: this.protocol, nAgents: this.nAgents, sample: samples[e]! };
        for (const slot of nextTurn(spec, problems[e]!, messages[e]!)) {
          due.push({ e, agent: slot.agent, turn: slot.turn, context: Int32Array.from(tokenizerOf(team[slot.agent]!).encodeContext(slot.context)) });
        }
      }
      if (due.length === 0) break;
      for (let a = 0; a < team.length; a++) {
        const mine = due.filter((d) => d.agent === a);
        if (mine.length === 0) continue;
        const agent = team[a] as LmAgentPolicy;
        const gen = await agent.generate(mine.map((d) => d.context), { maxNew: this.opts.maxNew, seed: rng.fork(round, a).nextU32(), stream: a });
        mine.forEach((d, i) => {
          const tokens = gen.tokens[i]!;
          written[d.e]!.push({ agent: a, turn: d.turn, context: d.context, tokens, stopped: gen.stopped[i]! });
          messages[d.e]!.push({ turn: d.turn, agent: a, text: tokenizerOf(agent).decodeMessage(tokens) });
        });
      }
    }
    return { written, messages };
  }

  async rollout(team: readonly AgentPolicy[], B: number, G: number, rng: Rng, opts: RolloutOptions = {}): Promise<Batch> {
    const problems: Problem[] = [];
    const samples: number[] = [];
    for (let g = 0; g < B; g++) {
      const problem = this.task.generate('train', rng.fork(g).int(1 << 24));
      for (let k = 0; k < G; k++) {
        problems.push(problem);
        samples.push(k);
      }
    }
    const { written, messages } = await this.play(team, problems, samples, rng.fork(0x6c6d));

    // The batch's token-state table: one sequence per message, one step per message token (+ EOS).
    const seqs: Int32Array[] = [];
    const stepSeq: number[] = [];
    const stepPos: number[] = [];
    const perEpisode: { agent: number; t: number; step: number; action: number }[][] = written.map(() => []);
    written.forEach((ws, e) => {
      for (const w of ws) {
        const seq = new Int32Array(w.context.length + w.tokens.length + (w.stopped ? 1 : 0));
        seq.set(w.context);
        seq.set(w.tokens, w.context.length);
        if (w.stopped) seq[seq.length - 1] = tokenizerOf(team[w.agent]!).eos;
        const id = seqs.push(seq) - 1;
        for (let pos = w.context.length; pos < seq.length; pos++) {
          perEpisode[e]!.push({ agent: w.agent, t: w.turn, step: stepSeq.length, action: seq[pos]! });
          stepSeq.push(id);
          stepPos.push(pos);
        }
      }
    });
    const context: LmSteps = { seqs, stepSeq: Int32Array.from(stepSeq), stepPos: Int32Array.from(stepPos) };

    // log π_cur of every step, from each agent's full forward pass (so ratios start at exactly 1);
    // NaN for the agents not `scored`.
    const logp = new Float64Array(stepSeq.length).fill(NaN);
    for (let a = 0; a < team.length; a++) {
      if (opts.scored && !opts.scored.includes(a)) continue;
      const mine = perEpisode.flat().filter((s) => s.agent === a);
      if (mine.length === 0) continue;
      const lp = await team[a]!.logProbs({ obs: Int32Array.from(mine, (s) => s.step), actions: Int32Array.from(mine, (s) => s.action), context });
      mine.forEach((s, i) => (logp[s.step] = lp[i]!));
    }

    const episodes: Episode[] = [];
    const records: LmEpisodeRecord[] = [];
    problems.forEach((problem, e) => {
      const spec: TeamSpec = { protocol: this.protocol, nAgents: this.nAgents, sample: samples[e]! };
      const verdict = teamVerdict(spec, this.task, problem, messages[e]!);
      const turns: AgentTurn[] = perEpisode[e]!.map((s) => ({ agent: s.agent, t: s.t, obs: s.step, action: s.action, logp: logp[s.step]! }));
      episodes.push({ prompt: problem.index, slot: samples[e]! % this.nAgents, group: Math.floor(e / G), turns, reward: verdict.reward });
      records.push({ problem, sample: samples[e]!, messages: messages[e]!, reward: verdict.reward, correct: verdict.correct });
    });
    if (opts.record !== false) this.lastEpisodes = records;
    return { episodes, groups: B, groupSize: G, context };
  }

  /** J on the first `evalEpisodes` held-out problems, one sampled episode each, with a fixed seed. */
  async evaluate(team: readonly AgentPolicy[]): Promise<TeamEvaluation & { accuracy: number }> {
    const E = this.opts.evalEpisodes;
    const problems = Array.from({ length: E }, (_, i) => this.task.generate('heldout', i));
    const samples = problems.map((_, i) => i);
    const { messages } = await this.play(team, problems, samples, new Rng(this.opts.evalSeed, [0x6576]));
    const rewards: number[] = [];
    let correct = 0;
    problems.forEach((problem, e) => {
      const v = teamVerdict({ protocol: this.protocol, nAgents: this.nAgents, sample: samples[e]! }, this.task, problem, messages[e]!);
      rewards.push(v.reward);
      if (v.correct) correct++;
    });
    const ci = meanCI(rewards);
    return { J: ci.mean, ci: Number.isFinite(ci.halfWidth) ? ci.halfWidth : 0, exact: false, accuracy: correct / E };
  }
}
