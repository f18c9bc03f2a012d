/**
 * Relay (protocol 'chain'): a pure communication game. The prompt is a secret x in 0..m-1 that
 * only agent 0 sees. At turn t only agent t acts (masked activation); agent t ≥ 1 sees every
 * earlier message a_0 .. a_{t-1} but not x. The team scores 1 if the last agent's message equals
 * x, else 0. The agents must invent a code to pass the secret along; the simplest is "copy".
 *
 * Local states: agent 0's state is x (m states). Agent t ≥ 1's state is the earlier messages read
 * as a base-m number with a_0 as the most significant digit (m^t states).
 *
 * Not here: noisy channels or messages longer than one symbol.
 */

import { checkTeamSize } from './tabular';
import type { Decision, TabularGame, TurnRecord } from './types';

/** The messages a_0 .. a_{t-1} as one base-m number (a_0 most significant). */
function encodeMessages(history: readonly TurnRecord[], m: number): number {
  let code = 0;
  for (const turn of history) code = code * m + turn.actions[0]!;
  return code;
}

/** The base-m digits of `code`, `length` of them, most significant first. */
function decodeMessages(code: number, m: number, length: number): number[] {
  const digits: number[] = new Array<number>(length).fill(0);
  for (let i = length - 1; i >= 0; i--) {
    digits[i] = code % m;
    code = Math.floor(code / m);
  }
  return digits;
}

/** Relay game: n agents in a chain, secrets and messages in 0..m-1. */
export function relay(n: number, m: number): TabularGame {
  checkTeamSize('relay', n, m);
  return {
    name: 'relay',
    title: `Relay: pass a secret in 0..${m - 1} down a chain of ${n} agents`,
    protocol: 'chain',
    nAgents: n,
    nActions: Array.from({ length: n }, () => m),
    // Agent 0 sees the secret (m states); agent t ≥ 1 sees t earlier messages (m^t states).
    nObs: Array.from({ length: n }, (_, t) => (t === 0 ? m : m ** t)),
    horizon: n,
    rewardRange: [0, 1],
    promptProbs: Array.from({ length: m }, () => 1 / m),
    nSlots: 1,
    turn(prompt: number, _slot: number, history: readonly TurnRecord[]): Decision[] {
      const t = history.length;
      if (t >= n) return [];
      const obs = t === 0 ? prompt : encodeMessages(history, m);
      return [{ agent: t, obs }];
    },
    reward(prompt: number, _slot: number, history: readonly TurnRecord[]): number {
      const last = history[history.length - 1]!.actions[0]!;
      return last === prompt ? 1 : 0;
    },
    promptLabel: (prompt: number) => `secret ${prompt}`,
    obsLabel(agent: number, obs: number): string {
      if (agent === 0) return `secret ${obs}`;
      return `heard ${decodeMessages(obs, m, agent).join('·')}`;
    },
    actionLabel: (_agent: number, action: number) => `say ${action}`,
  };
}
