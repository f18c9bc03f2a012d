/**
 * "What did the swap do?": the plug-and-play swap of a stage (docs/method.md §8) in numbers and one
 * small picture — who was swapped for what, how far the seated policy is from the agent it replaced
 * (KL quantiles against δ₀, share of states outside before and after Stage-0), the λ(s) histogram
 * of the projection, the team's J just before and after, and the swap's own certificate: the floor
 * its largest per-state KL radius guarantees (docs/certificate.md §8).
 *
 * Not here: making the swap (src/sat/experiment.ts swapIfDue) or its maths (stage0.ts).
 */
import type { CSSProperties } from 'react';
import { LAMBDA_EDGES } from '../../sat/stage0';
import type { StageRecord } from '../../sat/stage';
import { fixed3, sci, short, signed3 } from '../format';
import { agentColor } from '../theme';

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

/** `maxNew`: a language team's longest message in tokens (null for a table game); `span` and `lowestJ`: see vacuousFloor. */
export function SwapCard({ records, maxNew = null, span = 0, lowestJ = null }: { records: readonly StageRecord[]; maxNew?: number | null; span?: number; lowestJ?: number | null }) {
  const rec = records.find((r) => r.swap);
  if (!rec?.swap) return null;
  const s = rec.swap;
  const vacuous = s.certFloor !== undefined ? vacuousFloor(-s.certFloor, s.jBefore, span, lowestJ) : null;
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
          {s.jAfter - s.jBefore >= s.certFloor ? 'Held.' : 'Not held.'}
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
