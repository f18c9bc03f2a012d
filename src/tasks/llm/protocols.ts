/**
 * How a team of n language-model agents shares one episode (docs/method.md §2.2), as pure text
 * plumbing: who is active at each turn, the context each active agent sees, and the team's answer
 * and reward. A context is  prompt + (<a_i> message_i <sep>)* + <a_j>  over the earlier messages
 * agent j may see; each marker is one tokenizer token, and message text is cut at its first marker
 * (`cleanMessage`), so an agent cannot forge another's turn. At most MAX_AGENTS = 4 (<a0>..<a3>).
 *
 * Not here: sampling, log-probs, advantages (src/sat), tokenization (src/model).
 */
import { ConfigError, FormatError } from '../../core/errors';
import type { Protocol } from '../types';
import type { LlmTask, Problem, ProblemMeta, Verdict } from './types';

export type { Protocol } from '../types';

/**
 * The protocols, in the order the UI lists them:
 *   independent  one turn; sample k of a group is answered by agent k mod n alone.
 *   chain        n turns; agent t speaks at turn t, seeing the prompt and all earlier messages;
 *                the last message is graded.
 *   vote         one turn; every agent answers the prompt alone; the majority of the parsed
 *                answers is graded (ties: the first in agent order); unreadable answers do not vote.
 *   router       agent 0 emits one char "1".."n-1" naming a solver (spaces ignored; anything else
 *                ends the episode with reward 0 and a reason); the solver alone answers turn 1,
 *                seeing the prompt only, and its answer is graded.
 */
export const PROTOCOLS: readonly Protocol[] = ['independent', 'chain', 'vote', 'router'];

/** Most agents a team may have (the tokenizer's turn markers are <a0>..<a3>). */
export const MAX_AGENTS = 4;

/** Starts a sequence; the model layer prepends it, so contexts here omit it. */
export const BOS = '<bos>';
/** Ends the message being generated (the sampler stops there); never in a context. */
export const EOS = '<eos>';
/** Ends a finished message when it is shown to a later agent. */
export const SEP = '<sep>';

/** The turn marker of `agent`: "<a0>" … "<a3>". */
export function agentMarker(agent: number): string {
  if (!Number.isInteger(agent) || agent < 0 || agent >= MAX_AGENTS) {
    throw new ConfigError('agent', agent, `agent index must be an integer in [0, ${MAX_AGENTS - 1}], got ${agent}`);
  }
  return `<a${agent}>`;
}

/** Every marker string, each one token to the tokenizer. */
export const SPECIAL_MARKERS: readonly string[] = [...Array.from({ length: MAX_AGENTS }, (_, i) => `<a${i}>`), SEP, BOS, EOS];

/** One agent's message at one turn. */
export interface Message {
  /** Turn index, from 0. Agents of the same turn (vote) share it. */
  readonly turn: number;
  readonly agent: number;
  readonly text: string;
}

/** The team and protocol of one episode. */
export interface TeamSpec {
  readonly protocol: Protocol;
  /** Number of agents n, in [1, MAX_AGENTS] (router: at least 2). */
  readonly nAgents: number;
  /** For `independent`: the sample's index k in its group; agent k mod n answers. Default 0. */
  readonly sample?: number;
}

/** An agent due to act now, with the context it sees. */
export interface TurnSlot {
  readonly turn: number;
  readonly agent: number;
  readonly context: string;
}

/** One answer's tally in a vote. */
export interface VoteTally {
  /** The parsed answer (the verifier's canonical form). */
  readonly parsed: string;
  readonly count: number;
  /** The agents that gave it, in agent order. */
  readonly agents: readonly number[];
}

/** The team's outcome: the graded answer and its verdict. */
export interface TeamVerdict extends Verdict {
  readonly protocol: Protocol;
  /** The message text that was graded (null when nothing was: bad route, no readable vote). */
  readonly answer: string | null;
  /** The agent whose message was graded (vote: the first agent giving the winning answer). */
  readonly gradedAgent: number | null;
  /** vote: the tallies, largest first (ties in order of first appearance). */
  readonly votes?: readonly VoteTally[];
  /** router: the solver named by agent 0, or null when the route was invalid. */
  readonly route?: number | null;
}

// ---------------------------------------------------------------------------------------------
// Small pieces
// ---------------------------------------------------------------------------------------------

/** Throws ConfigError if the team does not fit the protocol. */
export function checkTeamSpec(spec: TeamSpec): void {
  if (!PROTOCOLS.includes(spec.protocol)) {
    throw new ConfigError('protocol', spec.protocol, `unknown protocol "${String(spec.protocol)}"; choose one of ${PROTOCOLS.join(', ')}`);
  }
  const min = spec.protocol === 'router' ? 2 : 1;
  if (!Number.isInteger(spec.nAgents) || spec.nAgents < min || spec.nAgents > MAX_AGENTS) {
    throw new ConfigError('agents', spec.nAgents, `protocol ${spec.protocol} needs an integer number of agents in [${min}, ${MAX_AGENTS}], got ${spec.nAgents}`);
  }
  if (spec.sample !== undefined && (!Number.isInteger(spec.sample) || spec.sample < 0)) {
    throw new ConfigError('sample', spec.sample, `sample index must be a non-negative integer, got ${spec.sample}`);
  }
}

/** Largest number of turns an episode can have (H of the episodic certificate). */
export function protocolHorizon(spec: TeamSpec): number {
  checkTeamSpec(spec);
  return spec.protocol === 'chain' ? spec.nAgents : spec.protocol === 'router' ? 2 : 1;
}

/** `independent`: the agent that answers sample k of a group. */
export function independentAgent(sample: number, nAgents: number): number {
  return sample % nAgents;
}

/** A message as it enters contexts and the verifier: cut at the first special marker. */
export function cleanMessage(text: string): string {
  let cut = text.length;
  for (const m of SPECIAL_MARKERS) {
    const at = text.indexOf(m);
    if (at >= 0 && at < cut) cut = at;
  }
  return text.slice(0, cut);
}

/** The context agent `agent` sees: prompt, the `visible` earlier messages, its own marker. */
export function buildContext(prompt: string, visible: readonly Message[], agent: number): string {
  let s = prompt;
  for (const m of visible) s += `${agentMarker(m.agent)}${cleanMessage(m.text)}${SEP}`;
  return s + agentMarker(agent);
}

/** A context split into plain-text runs and markers, in order (what a tokenizer walks). */
export function splitSpecial(context: string): string[] {
  const out: string[] = [];
  let run = '';
  let i = 0;
  outer: while (i < context.length) {
    if (context[i] === '<') {
      for (const m of SPECIAL_MARKERS) {
        if (context.startsWith(m, i)) {
          if (run) out.push(run);
          run = '';
          out.push(m);
          i += m.length;
          continue outer;
        }
      }
    }
    run += context[i];
    i++;
  }
  if (run) out.push(run);
  return out;
}

/** Tokens a context takes with a char-level tokenizer: one per character, one per marker. */
export function contextTokenCount(context: string): number {
  let n = 0;
  for (const piece of splitSpecial(context)) n += SPECIAL_MARKERS.includes(piece) ? 1 : [...piece].length;
  return n;
}

/**
 * Reads the router's message: one char "1".."n-1" (surrounding spaces ignored) names that solver.
 */
export function parseRoute(text: string, nAgents: number): { solver: number } | { error: string } {
  const t = typeof text === 'string' ? cleanMessage(text).trim() : '';
  const shown = typeof text === 'string' ? JSON.stringify(text.length > 20 ? `${text.slice(0, 20)}…` : text) : String(text);
  if (t.length === 1 && t >= '1' && t <= String(nAgents - 1)) return { solver: Number(t) };
  return { error: `router message ${shown} does not name a solver: expected one of ${Array.from({ length: nAgents - 1 }, (_, i) => i + 1).join(', ')}` };
}

/**
 * Majority of parsed answers (undefined = unreadable, no vote). Ties go to the answer given
 * first in agent order. Returns the tallies, winner first; [] when nobody voted.
 */
export function tallyVotes(parsed: readonly (string | undefined)[]): VoteTally[] {
  const byKey = new Map<string, number[]>();
  parsed.forEach((p, agent) => {
    if (p === undefined) return;
    const list = byKey.get(p);
    if (list) list.push(agent);
    else byKey.set(p, [agent]);
  });
  // Map keeps first-appearance order; a stable sort by count keeps it among ties.
  return [...byKey.entries()].map(([p, agents]) => ({ parsed: p, count: agents.length, agents })).sort((a, b) => b.count - a.count);
}

// ---------------------------------------------------------------------------------------------
// The schedule: who acts at each turn
// ---------------------------------------------------------------------------------------------

/** The agents active at `turn` given the complete earlier turns; null when the episode is over. */
function scheduledAgents(spec: TeamSpec, turn: number, earlier: readonly Message[]): number[] | null {
  const n = spec.nAgents;
  switch (spec.protocol) {
    case 'independent':
      return turn === 0 ? [independentAgent(spec.sample ?? 0, n)] : null;
    case 'chain':
      return turn < n ? [turn] : null;
    case 'vote':
      return turn === 0 ? Array.from({ length: n }, (_, i) => i) : null;
    case 'router': {
      if (turn === 0) return [0];
      if (turn > 1) return null;
      const route = parseRoute(earlier[0]!.text, n);
      return 'solver' in route ? [route.solver] : null;
    }
  }
}

interface Walk {
  /** Agents of the current (first incomplete) turn that have not spoken yet; [] when done. */
  readonly pending: number[];
  readonly turn: number;
  readonly done: boolean;
}

/** Checks that `messages` follow the schedule; says where the episode stands. */
function walk(spec: TeamSpec, messages: readonly Message[]): Walk {
  checkTeamSpec(spec);
  let i = 0;
  for (let turn = 0; ; turn++) {
    const agents = scheduledAgents(spec, turn, messages.slice(0, i));
    if (agents === null) {
      if (i < messages.length) {
        throw new FormatError(`${spec.protocol}: message ${i} (agent ${messages[i]!.agent}, turn ${messages[i]!.turn}) comes after the episode ended`);
      }
      return { pending: [], turn, done: true };
    }
    for (let k = 0; k < agents.length; k++, i++) {
      if (i === messages.length) return { pending: agents.slice(k), turn, done: false };
      const m = messages[i]!;
      if (m.turn !== turn || m.agent !== agents[k]) {
        throw new FormatError(`${spec.protocol}: message ${i} is from agent ${m.agent} at turn ${m.turn}, but the protocol has agent ${agents[k]} speak at turn ${turn}`);
      }
      if (typeof m.text !== 'string') throw new FormatError(`${spec.protocol}: message ${i} has no text`);
    }
  }
}

/** The earlier messages an agent acting at `turn` may see under `protocol`. */
function visibleMessages(protocol: Protocol, messages: readonly Message[], turn: number): Message[] {
  return protocol === 'chain' ? messages.filter((m) => m.turn < turn) : [];
}

/**
 * Who acts next and what each sees (masked activation): the active agents of the first
 * unfinished turn that have not spoken, each with its context; [] when the episode is over.
 * Throws FormatError if `messages` do not follow the protocol.
 */
export function nextTurn(spec: TeamSpec, problem: Problem, messages: readonly Message[]): TurnSlot[] {
  const w = walk(spec, messages);
  const visible = visibleMessages(spec.protocol, messages, w.turn);
  return w.pending.map((agent) => ({ turn: w.turn, agent, context: buildContext(problem.prompt, visible, agent) }));
}

/** The active set at the next turn (agents only); [] when the episode is over. */
export function activeAgents(spec: TeamSpec, messages: readonly Message[]): number[] {
  return walk(spec, messages).pending;
}

// ---------------------------------------------------------------------------------------------
// The team's answer and reward
// ---------------------------------------------------------------------------------------------

/**
 * Grades a finished episode with the task's verifier. Throws FormatError if the episode is not
 * finished or does not follow the protocol; any message text is fine (bad text → reward 0).
 */
export function teamVerdict<M extends ProblemMeta>(spec: TeamSpec, task: LlmTask<M>, problem: Problem<M>, messages: readonly Message[]): TeamVerdict {
  const w = walk(spec, messages);
  if (!w.done) throw new FormatError(`${spec.protocol}: the episode is not finished; agents ${w.pending.join(', ')} have yet to speak at turn ${w.turn}`);
  const grade = (m: Message): TeamVerdict => ({ ...task.verify(problem, cleanMessage(m.text)), protocol: spec.protocol, answer: m.text, gradedAgent: m.agent });

  switch (spec.protocol) {
    case 'independent':
      return grade(messages[0]!);
    case 'chain':
      return grade(messages[messages.length - 1]!);
    case 'vote': {
      const verdicts = messages.map((m) => task.verify(problem, cleanMessage(m.text)));
      const votes = tallyVotes(verdicts.map((v) => v.parsed));
      const win = votes[0];
      if (win === undefined) {
        return { reward: 0, correct: false, reason: 'no agent gave a readable answer, so there was no vote', protocol: 'vote', answer: null, gradedAgent: null, votes };
      }
      const agent = win.agents[0]!;
      return { ...verdicts[agent]!, protocol: 'vote', answer: messages[agent]!.text, gradedAgent: agent, votes };
    }
    case 'router': {
      const route = parseRoute(messages[0]!.text, spec.nAgents);
      if ('error' in route) return { reward: 0, correct: false, reason: route.error, protocol: 'router', answer: null, gradedAgent: null, route: null };
      return { ...grade(messages[1]!), route: route.solver };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Transcript
// ---------------------------------------------------------------------------------------------

/** A message quoted for people: JSON string, long ones shortened. */
function quote(text: string, max = 80): string {
  return JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text);
}

/**
 * A readable multi-line transcript: problem, prompt, reference, each message with its turn and
 * agent, the routing / vote tallies when present, the graded answer, the verdict and reward.
 */
export function formatTranscript(problem: Problem, turns: readonly Message[], verdict: Verdict | TeamVerdict): string {
  const lines: string[] = [];
  const tv = verdict as Partial<TeamVerdict> & Verdict;
  lines.push(`problem ${problem.id}${tv.protocol ? ` (${tv.protocol})` : ''}`);
  lines.push(`prompt: ${quote(problem.prompt)}`);
  lines.push(`reference: ${quote(problem.answer)}`);
  for (const m of turns) lines.push(`turn ${m.turn} agent ${m.agent} <a${m.agent}>: ${quote(m.text)}`);
  if (tv.route !== undefined) lines.push(tv.route === null ? 'route: invalid' : `route: agent 0 chose solver ${tv.route}`);
  if (tv.votes !== undefined) {
    const v = tv.votes.map((t) => `${quote(t.parsed)} x${t.count} (agent${t.agents.length > 1 ? 's' : ''} ${t.agents.join(',')})`);
    lines.push(`votes: ${v.length > 0 ? v.join('; ') : 'none'}`);
  }
  if (tv.gradedAgent !== undefined) {
    lines.push(tv.gradedAgent === null ? 'team answer: none' : `team answer: ${quote(tv.answer ?? '')} from agent ${tv.gradedAgent}`);
  }
  if (verdict.parsed !== undefined) lines.push(`parsed: ${quote(verdict.parsed)}`);
  lines.push(`verdict: ${verdict.correct ? 'correct' : 'wrong'}, reward ${verdict.reward.toFixed(3)}`);
  if (verdict.reason !== undefined) lines.push(`reason: ${verdict.reason}`);
  return lines.join('\n');
}
