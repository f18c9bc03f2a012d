/**
 * Worksheet prompts for a class: one "predict, then run" question per preset (presets.ts), and the
 * function that answers it from the run's own stage records — which agent backtracked first, how
 * many stages the certificate certified, who moved furthest, did J jump at the swap. A teacher asks
 * the question before pressing Run; the page reveals the answer this run measured.
 *
 *   WORKSHEET[preset]            { question, stages (how many the answer needs), answer(records) }
 *   answerWorksheet(preset, rs)  the answer, or how many more stages to run first
 *
 * Every answer is computed from the records handed in (the metric keys of docs/method.md §9, the
 * steps' backtracks and per-visit KL, a swap's summary) and says the numbers it rests on, so it is
 * true of the run on the page whatever its settings or seed — never a number written down in
 * advance. An answer reads stages 1 … `stages` of the run (the records are the run's finished
 * stages, in order).
 *
 * Not here: the presets' settings or their "what to look for" (presets.ts), showing the prompt
 * (src/app/components/Controls.tsx).
 */
import type { AgentStepRecord, StageRecord } from '../sat/stage';

/** A measured answer: the sentence shown, and the facts it rests on (for tests and the JSON). */
export interface WorksheetAnswer {
  readonly text: string;
  readonly facts: Readonly<Record<string, number | string | boolean | null | readonly number[]>>;
}

/**
 * What the lesson claims its preset shows on its own settings and default seed: the sentence the
 * page prints beside the revealed answer, and the check of that answer's facts
 * (tests/lessons.test.ts runs every preset's on its default seed).
 */
export interface LessonClaim {
  readonly says: string;
  readonly holds: (facts: WorksheetAnswer['facts']) => boolean;
}

export interface WorksheetQuestion {
  readonly question: string;
  /** Finished stages the answer reads (1 … stages). */
  readonly stages: number;
  /** The answer from stages 1 … `stages` (the caller checks there are enough). */
  readonly answer: (records: readonly StageRecord[]) => WorksheetAnswer;
  readonly lesson: LessonClaim;
}

export type WorksheetResult =
  | { readonly ready: false; readonly need: number; readonly have: number }
  | { readonly ready: true; readonly answer: WorksheetAnswer };

/** ΔJ below this counts as a fall (the CLI's "ΔJ<0 rate" uses the same threshold). */
export const FALL = -1e-9;

/** The coordination lesson: J above this is an optimum ((a, a) or (c, c) pay 10, the safe (b, b) 2). */
export const LESSON_OPTIMUM = 9;
/** The coordination lesson shows when SAT's final J is more than this above simultaneous' (same seed). */
export const LESSON_GAP = 5;

const num = (r: StageRecord | AgentStepRecord, key: string): number => {
  const v = r.metrics[key];
  return typeof v === 'number' ? v : Number.NaN;
};
const stage = (rs: readonly StageRecord[], k: number): StageRecord => {
  const r = rs.find((x) => x.stage === k);
  if (!r) throw new RangeError(`worksheet: stage ${k} is not among the records (stages ${rs.map((x) => x.stage).join(', ') || 'none'})`);
  return r;
};
const first = (rs: readonly StageRecord[], n: number): StageRecord[] => Array.from({ length: n }, (_, i) => stage(rs, i + 1));
const f3 = (x: number): string => (Number.isFinite(x) ? x.toFixed(3).replace(/^-/, '\u2212') : '—');
const list = (xs: readonly number[]): string => (xs.length === 0 ? 'none' : xs.join(', '));
const agentsOf = (r: StageRecord): number[] => r.steps.map((s) => s.agent).sort((a, b) => a - b);

/** Stages (of the first n) whose realised ΔJ fell. */
function falls(rs: readonly StageRecord[], n: number): WorksheetAnswer {
  const st = first(rs, n);
  const fell = st.filter((r) => num(r, 'team/dJ') < FALL).map((r) => r.stage);
  const worst = st.reduce((m, r) => Math.min(m, num(r, 'team/dJ')), Infinity);
  return {
    text:
      fell.length === 0
        ? `No: J rose or stayed level in each of the first ${n} stages (smallest ΔJ ${f3(worst)}).`
        : `Yes: J fell in stage${fell.length > 1 ? 's' : ''} ${list(fell)} of the first ${n} (largest fall ${f3(worst)}).`,
    facts: { fell, worstDJ: worst },
  };
}

/** How many of the first n stages were certified (cert/certified = 1). */
function certifiedCount(rs: readonly StageRecord[], n: number): WorksheetAnswer {
  const st = first(rs, n);
  const cert = st.filter((r) => num(r, 'cert/certified') === 1).map((r) => r.stage);
  const improved = st.filter((r) => num(r, 'team/dJ') > 0).length;
  return {
    text: `${cert.length} of ${n}${cert.length ? ` (stage${cert.length === 1 ? '' : 's'} ${list(cert)})` : ''}; J really rose in ${improved} of the ${n}${cert.length ? `, lower bounds ${cert.map((k) => f3(num(stage(rs, k), 'cert/lower'))).join(', ')}` : ''}.`,
    facts: { certified: cert, count: cert.length, improved },
  };
}

/** The first agent step, in run order, with a backtrack. */
function firstBacktrack(rs: readonly StageRecord[], n: number): WorksheetAnswer {
  for (const r of first(rs, n)) {
    for (const s of r.steps) {
      if (s.backtracks > 0) {
        return {
          text: `Agent ${s.agent}, in stage ${r.stage} (step ${s.position + 1} of σ): ${s.backtracks} backtrack${s.backtracks > 1 ? 's' : ''}, then ${s.accepted ? 'accepted' : 'rejected'}.`,
          facts: { agent: s.agent, stage: r.stage, backtracks: s.backtracks },
        };
      }
    }
  }
  return { text: `None: no agent left its trust region in the first ${n} stages.`, facts: { agent: null, stage: null, backtracks: 0 } };
}

/** Did the certificate hold in each of the first n stages? */
function heldAll(rs: readonly StageRecord[], n: number): WorksheetAnswer {
  const st = first(rs, n);
  const notHeld = st.filter((r) => num(r, 'cert/held') !== 1).map((r) => r.stage);
  return {
    text: notHeld.length === 0 ? `Yes: the lower bound was at most the realised ΔJ in all ${n} stages.` : `No: it did not hold in stage${notHeld.length > 1 ? 's' : ''} ${list(notHeld)} of ${n}.`,
    facts: { notHeld, held: n - notHeld.length },
  };
}

/** Backtracks and rejected updates per agent (index order) over the first n stages; `top`: the most backtracked (none if 0). */
function backtracksByAgent(rs: readonly StageRecord[], n: number): { totals: number[]; rejected: number[]; max: number; top: number[] } {
  const st = first(rs, n);
  const agents = [...new Set(st.flatMap(agentsOf))].sort((a, b) => a - b);
  const steps = st.flatMap((r) => r.steps);
  const totals = agents.map((a) => steps.filter((s) => s.agent === a).reduce((x, s) => x + s.backtracks, 0));
  const rejected = agents.map((a) => steps.filter((s) => s.agent === a && !s.accepted).length);
  const max = Math.max(0, ...totals);
  return { totals, rejected, max, top: max === 0 ? [] : agents.filter((_, i) => totals[i] === max) };
}

/** The agent(s) with the largest value of `agent/<j>/<key>` in stage k. */
function argmaxAgent(r: StageRecord, key: string): { agents: number[]; value: number; values: number[] } {
  const agents = agentsOf(r);
  const values = agents.map((j) => num(r, `agent/${j}/${key}`));
  const value = Math.max(...values.filter(Number.isFinite));
  return { agents: agents.filter((_, i) => values[i] === value), value, values };
}

export const WORKSHEET: Readonly<Record<string, WorksheetQuestion>> = {
  climbing: {
    question: 'In the first 5 stages, will team J ever fall from one stage to the next? If so, when?',
    stages: 5,
    answer: (rs) => falls(rs, 5),
    lesson: { says: 'J does not fall in any of the first 5 stages.', holds: (f) => Array.isArray(f.fell) && f.fell.length === 0 },
  },
  climbing2: {
    question: 'How many of the first 5 stages will the certificate certify — a lower bound above 0?',
    stages: 5,
    answer: (rs) => certifiedCount(rs, 5),
    lesson: { says: 'The certificate certifies at least 4 of the first 5 stages.', holds: (f) => (f.count as number) >= 4 },
  },
  penalty: {
    question: 'Which agent will backtrack first (its update leaving the trust region) — or will none in 5 stages?',
    stages: 5,
    answer: (rs) => firstBacktrack(rs, 5),
    lesson: { says: 'An agent backtracks already in stage 1: the trust region pushes back at once.', holds: (f) => f.stage === 1 },
  },
  coordination: {
    question: 'After 10 stages, will the team play one of the two optima — J above 9 (of 10)? Then press Overlay simultaneous: will moving together get there too?',
    stages: 10,
    answer: (rs) => {
      const j = rs[9]!.jAfter;
      const at = j > 9;
      return { text: `${at ? 'Yes' : 'No'}: J is ${j.toFixed(3)} after stage 10 (${at ? 'the agents agreed on an optimum' : 'not yet at an optimum of 10'}).`, facts: { j, atOptimum: at } };
    },
    lesson: { says: 'One at a time the agents agree on an optimum: J above 9 after stage 10 (simultaneous, on this seed, ends at the safe J = 2).', holds: (f) => f.atOptimum === true },
  },
  relay: {
    question: 'Will the certificate hold (lower bound ≤ realised ΔJ) in every one of the first 5 stages?',
    stages: 5,
    answer: (rs) => heldAll(rs, 5),
    lesson: { says: 'The certificate holds in all of the first 5 stages.', holds: (f) => Array.isArray(f.notHeld) && f.notHeld.length === 0 },
  },
  router: {
    question: 'Over the first 5 stages, whose updates will the trust region push back more often: the router’s (agent 0) or a solver’s?',
    stages: 5,
    answer: (rs) => {
      const b = backtracksByAgent(rs, 5);
      const name = (j: number) => (j === 0 ? 'the router (agent 0)' : `solver agent ${j}`);
      const who = b.top.length === 0 ? 'Nobody: no update backtracked' : b.top.map(name).join(' and ');
      return {
        text: `${who[0]!.toUpperCase()}${who.slice(1)}${b.top.length ? `, ${b.max} backtrack${b.max > 1 ? 's' : ''}` : ''} (per agent: ${b.totals.join(', ')}; rejected updates per agent: ${b.rejected.join(', ')}).`,
        facts: { agents: b.top, totals: b.totals, rejected: b.rejected },
      };
    },
    lesson: { says: 'The trust region pushes back on the router and on every solver: each backtracks at least once.', holds: (f) => Array.isArray(f.totals) && f.totals.length > 0 && f.totals.every((t) => t > 0) },
  },
  'random-matrix': {
    question: "In stage 1, which agent's own update will raise team J the most?",
    stages: 1,
    answer: (rs) => {
      const r = stage(rs, 1);
      const m = argmaxAgent(r, 'dJ');
      if (!Number.isFinite(m.value)) return { text: 'This run does not measure J after each agent (only after the stage), so it cannot say.', facts: { agents: [], dJ: m.values } };
      return { text: `Agent ${m.agents.join(' and ')}: ΔJ_i = ${f3(m.value)} (agents 0…: ${m.values.map(f3).join(', ')}; σ = ${r.order.join('→')}).`, facts: { agents: m.agents, dJ: m.values } };
    },
    lesson: { says: 'Agent 0, first in σ, raises J the most in stage 1.', holds: (f) => Array.isArray(f.agents) && f.agents.length === 1 && f.agents[0] === 0 },
  },
  order: {
    question: 'Greedy updates first the agent with the largest predicted gain. Which agent goes first in stage 1 — and is it still first in stage 5?',
    stages: 5,
    answer: (rs) => {
      const a = stage(rs, 1).order[0]!;
      const b = stage(rs, 5).order[0]!;
      return { text: `Agent ${a} went first in stage 1; in stage 5 agent ${b} did${a === b ? ' — the same one' : ''} (σ = ${stage(rs, 1).order.join('→')}, then ${stage(rs, 5).order.join('→')}).`, facts: { first1: a, first5: b, same: a === b } };
    },
    lesson: { says: 'Greedy puts agent 2 first in stage 1 and again in stage 5.', holds: (f) => f.first1 === 2 && f.first5 === 2 },
  },
  'delta-sweep': {
    question: 'In stage 1, what share of the visited states will end past δ — under 10 %, about a quarter, or most of them?',
    stages: 1,
    answer: (rs) => {
      const r = stage(rs, 1);
      let over = 0;
      let visits = 0;
      for (const s of r.steps) {
        for (const k of s.kl) if (k > s.delta) over++;
        visits += s.kl.length;
      }
      const share = visits > 0 ? over / visits : 0;
      return { text: `${(100 * share).toFixed(1)} %: ${over} of ${visits} state visits had KL > δ = ${r.steps[0]?.delta ?? '—'} (all agents pooled).`, facts: { share, over, visits } };
    },
    lesson: { says: 'Most visited states (over half) end past δ in stage 1, the first step from the start (averaged over 5 stages the share is about 0.19).', holds: (f) => (f.share as number) > 0.5 },
  },
  'relay-pnp': {
    question: "Before stage 8 agent 1's seat gets the best response, projected into the trust region. Will J jump at the swap, and will stage 8's certificate hold?",
    stages: 8,
    answer: (rs) => {
      const r = stage(rs, 8);
      const held = num(r, 'cert/held') === 1;
      if (!r.swap) return { text: `No swap was made before stage 8 in this run (swapAgent/swapAt were changed); stage 8's certificate ${held ? 'held' : 'did not hold'}.`, facts: { jump: null, held } };
      const jump = r.swap.jAfter - r.swap.jBefore;
      return {
        text: `At the swap J went ${f3(r.swap.jBefore)} → ${f3(r.swap.jAfter)} (${jump >= 0 ? '+' : ''}${f3(jump)}, ${r.swap.stage0 ? 'with' : 'without'} Stage-0); stage 8's certificate ${held ? 'held' : 'did not hold'} (bound ${f3(num(r, 'cert/lower'))}, ΔJ ${f3(num(r, 'team/dJ'))}).`,
        facts: { jump, held },
      };
    },
    lesson: { says: 'J rises at the swap and stage 8’s certificate holds.', holds: (f) => (f.jump as number) > 0 && f.held === true },
  },
  'arith-team': {
    question: 'After 3 stages, will held-out J be higher than before stage 1?',
    stages: 3,
    answer: (rs) => {
      const j0 = stage(rs, 1).jBefore;
      const j3 = num(stage(rs, 3), 'team/J');
      return { text: `${j3 > j0 ? 'Yes' : 'No'}: J ${f3(j0)} before stage 1, ${f3(j3)} after stage 3 (${j3 - j0 >= 0 ? '+' : ''}${f3(j3 - j0)}; held-out, with sampling noise).`, facts: { j0, j3, higher: j3 > j0 } };
    },
    lesson: { says: 'Held-out J is higher after stage 3 than before stage 1.', holds: (f) => f.higher === true },
  },
  'arith-single-L': {
    question: "In how many of the first 3 stages will the single model's held-out J rise?",
    stages: 3,
    answer: (rs) => {
      const rose = first(rs, 3).filter((r) => num(r, 'team/dJ') > 0).map((r) => r.stage);
      return { text: `${rose.length} of 3 (stage${rose.length === 1 ? '' : 's'} ${list(rose)}).`, facts: { rose, count: rose.length } };
    },
    lesson: { says: 'Held-out J rises in at least one of the first 3 stages.', holds: (f) => (f.count as number) >= 1 },
  },
  'plan-team': {
    question: 'Which agent of the chain will backtrack most over the first 3 stages?',
    stages: 3,
    answer: (rs) => {
      const b = backtracksByAgent(rs, 3);
      return {
        text: b.top.length === 0 ? 'None backtracked in the first 3 stages.' : `Agent ${b.top.join(' and ')}, ${b.max} backtrack${b.max > 1 ? 's' : ''} (per agent: ${b.totals.join(', ')}).`,
        facts: { agents: b.top, totals: b.totals },
      };
    },
    lesson: { says: 'No agent of the chain backtracks in the first 3 stages: at δ = 0.1 every step stays inside its trust region.', holds: (f) => Array.isArray(f.agents) && f.agents.length === 0 },
  },
  'plan-team-2': {
    question: 'Will any of the first 3 stages be certified — a lower bound above 0?',
    stages: 3,
    answer: (rs) => certifiedCount(rs, 3),
    lesson: { says: 'At least one of the first 3 stages is certified.', holds: (f) => (f.count as number) >= 1 },
  },
  'arith-pnp': {
    question: "Agent 1's seat gets the larger M model before stage 3. Will stage 3 need more backtracks than stage 2?",
    stages: 3,
    answer: (rs) => {
      const bt = (k: number) => stage(rs, k).steps.reduce((s, x) => s + x.backtracks, 0);
      const b2 = bt(2);
      const b3 = bt(3);
      const swapped = stage(rs, 3).swap !== undefined;
      return {
        text: `${b3 > b2 ? 'Yes' : 'No'}: ${b2} backtrack${b2 === 1 ? '' : 's'} in stage 2, ${b3} in stage 3${swapped ? ' (after the swap)' : ' (no swap was made: swapAgent/swapAt were changed)'}.`,
        facts: { b2, b3, more: b3 > b2, swapped },
      };
    },
    lesson: { says: 'With Stage-0 the swapped-in M model does not cost the team extra backtracks: stage 3 needs no more than stage 2.', holds: (f) => f.swapped === true && f.more === false },
  },
};

/** The preset's question answered from `records` (a run's finished stages), or what is missing. */
export function answerWorksheet(preset: string, records: readonly StageRecord[]): WorksheetResult {
  const q = WORKSHEET[preset];
  if (!q) throw new RangeError(`No worksheet question for preset "${preset}".`);
  const have = records.filter((r) => r.stage >= 1 && r.stage <= q.stages).length;
  if (have < q.stages) return { ready: false, need: q.stages, have };
  return { ready: true, answer: q.answer(records) };
}
