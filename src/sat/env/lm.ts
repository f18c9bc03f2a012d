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
 * An agent in a worker (`TextSpeaker`: src/workers/remoteTeam.ts) is sent its contexts as text and
 * encodes, writes and decodes them there in one call, so a checkpoint's tokenizer is never built
 * on the page's main thread.
 *
 * Not here: the agents (src/sat/agents), the model (src/model) or the protocols' text (src/tasks/llm).
 */
import { Rng } from '../../core/rng';
import { meanCI } from '../../core/stats';
import { tokenizer as charTokenizer, type TextTokenizer } from '../../model/tokenizer';
import { nextTurn, protocolHorizon, teamVerdict, type Message, type TeamSpec } from '../../tasks/llm/protocols';
import type { LlmTask, Problem } from '../../tasks/llm/types';
import type { GenerateOptions, LmAgentPolicy, LmSteps } from '../agents/lm';
import type { CertEstimator, CertScope } from '../certificate';
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
  /** The writer's end-of-message token. */
  readonly eos: number;
}

/** Messages written for text contexts: each context's ids, each message's tokens and text, the writer's end token. */
export interface Spoken {
  readonly contexts: Int32Array[];
  readonly tokens: Int32Array[];
  readonly stopped: boolean[];
  readonly texts: string[];
  readonly eos: number;
}

/** An agent whose tokenizer lives with its model (an agent in a worker): it is handed its contexts as text. */
export interface TextSpeaker {
  speak(contexts: readonly string[], opts: GenerateOptions): Promise<Spoken>;
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

/** `agent`'s messages after text `contexts`, encoded and decoded with its own tokenizer, here. */
export async function speakHere(agent: LmAgentPolicy, contexts: readonly string[], opts: GenerateOptions): Promise<Spoken> {
  const tk = tokenizerOf(agent);
  const ids = contexts.map((c) => Int32Array.from(tk.encodeContext(c)));
  const gen = await agent.generate(ids, opts);
  return { contexts: ids, tokens: gen.tokens, stopped: gen.stopped, texts: gen.tokens.map((t) => tk.decodeMessage(t)), eos: tk.eos };
}

/** `agent`'s messages after `contexts`: where its tokenizer is (its worker, for a TextSpeaker). */
function speak(agent: AgentPolicy, contexts: readonly string[], opts: GenerateOptions): Promise<Spoken> {
  const s = agent as Partial<TextSpeaker>;
  return typeof s.speak === 'function' ? s.speak(contexts, opts) : speakHere(agent as LmAgentPolicy, contexts, opts);
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
  /** The team-level certificate (docs/certificate.md §5.1): the per-agent one cannot certify a language team's small gains. */
  certScope: CertScope = 'team';
  /** The team-level estimator (docs/certificate.md §5.4): the truncated ratio unless a report asks for the mixture. */
  certEstimator: CertEstimator = 'truncated-is';
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
      const due: { e: number; agent: number; turn: number; context: string }[] = [];
      for (let e = 0; e < E; e++) {
        const spec: TeamSpec = { protocol: this.protocol, nAgents: this.nAgents, sample: samples[e]! };
        for (const slot of nextTurn(spec, problems[e]!, messages[e]!)) due.push({ e, agent: slot.agent, turn: slot.turn, context: slot.context });
      }
      if (due.length === 0) break;
      for (let a = 0; a < team.length; a++) {
        const mine = due.filter((d) => d.agent === a);
        if (mine.length === 0) continue;
        const said = await speak(team[a]!, mine.map((d) => d.context), { maxNew: this.opts.maxNew, seed: rng.fork(round, a).nextU32(), stream: a });
        mine.forEach((d, i) => {
          written[d.e]!.push({ agent: a, turn: d.turn, context: said.contexts[i]!, tokens: said.tokens[i]!, stopped: said.stopped[i]!, eos: said.eos });
          messages[d.e]!.push({ turn: d.turn, agent: a, text: said.texts[i]! });
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
        if (w.stopped) seq[seq.length - 1] = w.eos;
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

/**
 * A language team whose J is exact (docs/certificate.md §13): every message an agent can write is
 * enumerated — token by token, from the agent's own sampler distribution (`distributions`: softmax
 * at τ, top-k truncated) — over a task's few problems (`problems`, drawn uniformly, as the train
 * split draws them), and J = Σ over episodes of probability × reward. Only for tiny vocabularies and
 * short messages (src/tasks/llm/tiny.ts): the episodes number (messages per context)^(turns).
 * `evaluate` returns it with exact = true, so a stage's ΔJ and "held" are exact.
 */
export class ExactLmEnv extends LmEnv {
  readonly problems: readonly Problem[];
  constructor(task: LlmTask, protocol: TeamSpec['protocol'], nAgents: number, opts: LmEnvOptions, problems: readonly Problem[]) {
    super(task, protocol, nAgents, opts);
    if (protocol === 'independent') throw new RangeError('ExactLmEnv: the independent protocol depends on the sample index; enumerate chain, vote or router');
    this.problems = problems;
  }

  override async evaluate(team: readonly AgentPolicy[]): Promise<TeamEvaluation & { accuracy: number }> {
    const { J, accuracy } = await this.exact(team);
    return { J, ci: 0, exact: true, accuracy };
  }

  /** J(team) by enumeration (the class comment). */
  async exactJ(team: readonly AgentPolicy[]): Promise<number> {
    return (await this.exact(team)).J;
  }

  /** J and the probability of a correct answer, by enumeration. */
  private async exact(team: readonly AgentPolicy[]): Promise<{ J: number; accuracy: number }> {
    interface State { readonly problem: Problem; readonly messages: readonly Message[]; readonly prob: number }
    let states: State[] = this.problems.map((problem) => ({ problem, messages: [], prob: 1 / this.problems.length }));
    let J = 0;
    let accuracy = 0;
    while (states.length > 0) {
      const due: { s: number; agent: number; turn: number; context: Int32Array }[] = [];
      const open: number[] = [];
      states.forEach((st, s) => {
        const spec: TeamSpec = { protocol: this.protocol, nAgents: this.nAgents, sample: 0 };
        const slots = nextTurn(spec, st.problem, st.messages);
        if (slots.length === 0) {
          const v = teamVerdict(spec, this.task, st.problem, st.messages);
          J += st.prob * v.reward;
          if (v.correct) accuracy += st.prob;
        } else open.push(s);
        for (const slot of slots) due.push({ s, agent: slot.agent, turn: slot.turn, context: Int32Array.from(tokenizerOf(team[slot.agent]!).encodeContext(slot.context)) });
      });
      // Every message of every due slot, with its probability, one distributions() call per agent.
      const options = new Map<number, { text: string; p: number }[]>();
      for (let a = 0; a < team.length; a++) {
        const mine = due.map((d, k) => ({ d, k })).filter((x) => x.d.agent === a);
        if (mine.length === 0) continue;
        const msgs = await this.messagesOf(team[a]!, mine.map((x) => x.d.context));
        mine.forEach((x, i) => options.set(x.k, msgs[i]!));
      }
      const next: State[] = [];
      for (const s of open) {
        // Slots of one state in agent order (the order LmEnv.play appends a round's messages).
        const mine = due.map((d, k) => ({ d, k })).filter((x) => x.d.s === s).sort((x, y) => x.d.agent - y.d.agent);
        let partial: { messages: Message[]; prob: number }[] = [{ messages: [...states[s]!.messages], prob: states[s]!.prob }];
        for (const { d, k } of mine) {
          partial = partial.flatMap((pt) => options.get(k)!.map((m) => ({ messages: [...pt.messages, { turn: d.turn, agent: d.agent, text: m.text }], prob: pt.prob * m.p })));
        }
        for (const pt of partial) if (pt.prob > 0) next.push({ problem: states[s]!.problem, messages: pt.messages, prob: pt.prob });
      }
      states = next;
    }
    return { J, accuracy };
  }

  /** Every message (text, probability) `agent` can write after each context, enumerated token by token. */
  private async messagesOf(agent: AgentPolicy, contexts: readonly Int32Array[]): Promise<{ text: string; p: number }[][]> {
    const tok = tokenizerOf(agent);
    const V = tok.vocabSize;
    const maxNew = this.opts.maxNew;
    // Prefixes of non-end tokens shorter than maxNew: the states whose next-token distribution is needed.
    const prefixes: number[][] = [[]];
    for (let i = 0; i < prefixes.length; i++) {
      if (prefixes[i]!.length + 1 >= maxNew) continue;
      for (let v = 0; v < V; v++) if (v !== tok.eos) prefixes.push([...prefixes[i]!, v]);
    }
    const seqs: Int32Array[] = [];
    const stepPos: number[] = [];
    for (const c of contexts) {
      for (const pre of prefixes) {
        seqs.push(Int32Array.from([...c, ...pre, 0])); // the final 0 only gives the step a position
        stepPos.push(c.length + pre.length);
      }
    }
    const K = seqs.length;
    const dist = await agent.distributions({ obs: Int32Array.from({ length: K }, (_, k) => k), context: { seqs, stepSeq: Int32Array.from({ length: K }, (_, k) => k), stepPos: Int32Array.from(stepPos) } satisfies LmSteps });
    const rowOf = new Map(prefixes.map((p, i) => [p.join(','), i]));
    return contexts.map((_, c) => {
      const out: { text: string; p: number }[] = [];
      const walk = (pre: number[], prob: number): void => {
        const row = (c * prefixes.length + rowOf.get(pre.join(','))!) * V;
        for (let v = 0; v < V; v++) {
          const p = prob * dist[row + v]!;
          if (!(p > 0)) continue;
          if (v === tok.eos) out.push({ text: tok.decodeMessage(pre), p });
          else if (pre.length + 1 >= maxNew) out.push({ text: tok.decodeMessage([...pre, v]), p });
          else walk([...pre, v], p);
        }
      };
      walk([], 1);
      return out;
    });
  }
}
