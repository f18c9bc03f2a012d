/**
 * "What did the swap do?": the plug-and-play swap of a stage (docs/method.md §8) in numbers and one
 * small picture — who was swapped for what, how far the seated policy is from the agent it replaced
 * (KL quantiles against δ₀, share of states outside before and after Stage-0), the λ(s) histogram
 * of the projection, the team's J just before and after, and the swap's own certificate: the floor
 * its largest per-state KL radius guarantees (docs/certificate.md §8).
 *
 * Before the swap stage starts, `SwapAnnouncement` says that the next step begins with the swap,
 * what it does and what it costs against a normal stage.
 *
 * Not here: making the swap (src/sat/experiment.ts swapIfDue) or its maths (stage0.ts).
 */
import type { CSSProperties } from 'react';
import type { Config } from '../../sat/config';
import { isLlmTask } from '../../sat/config';
import { LAMBDA_EDGES } from '../../sat/stage0';
import type { StageRecord } from '../../sat/stage';
import { fixed3, sci, short, signed3 } from '../format';
import { usePlayground } from '../store';
import { agentColor } from '../theme';
import { VerdictGlyph } from '../charts/VerdictMark';

function edge(x: number): string {
  return x === Infinity ? '∞' : short(x);
}

/**
 * The swap's radius in words. A table's radius is measured: the largest KL over every state of
 * the agent's table. A language seat's is the bound Stage-0 guarantees, not a measurement: each
 * token's KL ≤ δ₀ at every state it samples from, so a message of at most maxNew tokens (one of
 * the agent's turns, the unit the floor counts) is within maxNew·δ₀.
 */
export function radiusWords(s: { certRadius: number; stage0: boolean; delta0: number }, maxNew: number | null): string {
  if (maxNew !== null) {
    return `each token of its messages is within KL δ₀ = ${short(s.delta0)} of the replaced agent by Stage-0, so a message of at most maxNew = ${maxNew} tokens is within ${sci(s.certRadius)} (= ${maxNew}·δ₀)`;
  }
  return `its largest KL to the replaced agent at any state is ${sci(s.certRadius)}${s.stage0 ? ` (≤ δ₀ = ${short(s.delta0)} by Stage-0)` : ''}`;
}

/**
 * Why the swap's floor says nothing, or null: a fall larger than J's whole range (`span`, R_max −
 * R_min over an episode) or larger than J stood above its lowest possible value (`lowestJ`: 0 for a
 * language team, whose rewards are in [0, 1]; unknown, null, for a table) cannot happen anyway.
 */
export function vacuousFloor(fall: number, jBefore: number, span: number, lowestJ: number | null): string | null {
  if (lowestJ !== null && fall >= jBefore - lowestJ) return `vacuous here: J stood at ${fixed3(jBefore)}, only ${fixed3(jBefore - lowestJ)} above the lowest J there is, so no swap could lower it by more — this bound rules nothing out`;
  if (span > 0 && fall >= span) return `vacuous here: it is wider than J's whole range (${fixed3(span)}), so it rules nothing out`;
  return null;
}

/**
 * A language swap stage against a normal one, measured on the arith-pnp preset (CPU kernels, one
 * process, load 11–12 on a 2-core machine): stages 1, 2 and 4 took 2.3, 1.9 and 2.4 s, the swap
 * stage 3 took 28.8 s (docs/performance.md "The cost of a swap stage").
 */
export const SWAP_STAGE_COST = { ratio: 13, preset: 'arith-pnp' } as const;

/**
 * What the next step starts with when it is the configured swap (stage swapAt, before its first
 * agent step), in words: who gets which model and how, and the expected cost. Null when the next
 * step is not the swap's.
 */
export function swapAnnouncement(cfg: Config, stagesDone: number, midStage: boolean, preset: string): string | null {
  if (cfg.swapAgent < 0 || midStage || stagesDone + 1 !== cfg.swapAt) return null;
  const who = `agent ${cfg.swapAgent}'s seat`;
  if (!isLlmTask(cfg.task)) {
    return `The next step starts stage ${cfg.swapAt} with a plug-and-play swap: ${who} gets the best response to the team, computed exactly from the tables${cfg.swapStage0 ? ` and projected by Stage-0 into KL ≤ δ₀ = ${cfg.stage0Delta}` : ''} — a moment's work, about the cost of a normal stage.`;
  }
  const how = cfg.swapStage0
    ? `projected by Stage-0 into KL ≤ δ₀ = ${cfg.stage0Delta} of the agent it replaces and distilled on the token states of a fresh ${cfg.batch * cfg.group}-episode rollout`
    : 'seated as it is (no Stage-0)';
  const cost = cfg.swapStage0
    ? `Expect the stage to take about ${SWAP_STAGE_COST.ratio}× a normal stage (measured on the ${SWAP_STAGE_COST.preset} preset${preset === SWAP_STAGE_COST.preset ? '' : '; other settings differ'}: the distillation is most of it).`
    : 'Without Stage-0 there is no distillation: the stage costs about as much as a normal one, plus loading the model.';
  return `The next step starts stage ${cfg.swapAt} with a plug-and-play swap: ${who} gets the ${cfg.task}-${cfg.swapTo} model, ${how}, before the stage's first update. ${cost}`;
}

/** The swap, announced before the step that starts it (see swapAnnouncement), under the step controls. */
export function SwapAnnouncement() {
  const cfg = usePlayground((s) => s.config);
  const stagesDone = usePlayground((s) => s.stages.length);
  const midStage = usePlayground((s) => s.partial.length > 0);
  const preset = usePlayground((s) => s.preset);
  const text = cfg ? swapAnnouncement(cfg, stagesDone, midStage, preset) : null;
  if (!text) return null;
  return (
    <p className="notice swap-next" data-testid="swap-next" role="status">
      {text}
    </p>
  );
}

/** `maxNew`: a language team's longest message in tokens (null for a table game); `span` and `lowestJ`: see vacuousFloor. */
export function SwapCard({ records, maxNew = null, span = 0, lowestJ = null }: { records: readonly StageRecord[]; maxNew?: number | null; span?: number; lowestJ?: number | null }) {
  const rec = records.find((r) => r.swap);
  if (!rec?.swap) return null;
  const s = rec.swap;
  const vacuous = s.certFloor !== undefined ? vacuousFloor(-s.certFloor, s.jBefore, span, lowestJ) : null;
  const swapHeld = s.certFloor !== undefined && s.jAfter - s.jBefore >= s.certFloor ? 'held' : 'not held';
  const max = Math.max(1, ...s.lambdaHist);
  const pct = (x: number) => `${(100 * x).toFixed(0)} %`;
  return (
    <section className="swap-card" data-testid="swap-card" style={{ '--agent': agentColor(s.agent) } as CSSProperties} aria-label="Plug-and-play swap">
      <h3>What did the swap do?</h3>
      <p>
        Before stage {rec.stage}, <strong>agent {s.agent}</strong>’s seat got the <strong>{s.incoming}</strong>,{' '}
        {s.stage0 ? (
          <>
            projected by Stage-0 into KL ≤ δ₀ = {short(s.delta0)} of the agent it replaced
          </>
        ) : (
          <>seated as it is (Stage-0 off)</>
        )}
        . Team J {fixed3(s.jBefore)} → {fixed3(s.jAfter)} ({signed3(s.jAfter - s.jBefore)}).
      </p>
      {s.certFloor !== undefined && (
        <p data-testid="swap-cert">
          Certified: the swap cannot have lowered J by more than <strong>{fixed3(-s.certFloor)}</strong>
          {Number.isFinite(s.certRadius) ? (
            <>
              {' '}— <span data-testid="swap-radius" data-value={s.certRadius}>{radiusWords(s, maxNew)}</span>, and a step of that size at each of its turns moves J by at most that much (docs/certificate.md §8).
            </>
          ) : (
            <> — no per-state radius is known without Stage-0, so only the trivial bound (the reward range) applies.</>
          )}{' '}
          <span data-testid="swap-held">
            <VerdictGlyph verdict={swapHeld} /> {swapHeld === 'held' ? 'Held' : 'Not held'}
            {maxNew !== null ? ' on held-out J (an estimate, with its noise)' : ''}.
          </span>
          {vacuous && (
            <>
              {' '}
              <strong className="chart-warn" data-testid="swap-vacuous">
                The floor is {vacuous}.
              </strong>
            </>
          )}
        </p>
      )}
      <p className="muted">
        KL(seated ‖ replaced) over the agent’s states, visit-weighted: median {sci(s.klQuantiles.q50)}, 90 % {sci(s.klQuantiles.q90)}, 99 % {sci(s.klQuantiles.q99)}. Outside δ₀:{' '}
        {pct(s.outsideBefore)} of states before the projection, <strong data-testid="swap-outside">{pct(s.outsideAfter)}</strong> as seated.
      </p>
      {s.stage0 && (
        <div className="lambda-hist" aria-label="λ(s) histogram">
          {s.lambdaHist.map((c, b) => (
            <div key={b} className="lambda-bin" title={`${c} states with λ in [${edge(LAMBDA_EDGES[b]!)}, ${edge(LAMBDA_EDGES[b + 1]!)})`}>
              <div className="lambda-bar" style={{ height: `${(48 * c) / max}px` }} />
              <span>{edge(LAMBDA_EDGES[b]!)}</span>
            </div>
          ))}
          <span className="muted lambda-note">λ(s): 0 = the incoming policy was already inside the ball; large = pulled hard towards the old agent.</span>
        </div>
      )}
    </section>
  );
}
