/**
 * "Where did the promise come from?" — one stage's certificate as a waterfall (docs/certificate.md
 * §4–§6, §12): the fresh gain Σ Ĝ_i — each agent's importance-sampling gain measured on a
 * certification batch its update never saw — up from 0, then −shift, −bias, −finite down from where
 * the last bar ended, so the running end is the lower bound; the lower bound again as a total from
 * 0, beside the realised ΔJ (filled ink when it reached the bound, hollow red when it did not).
 * First, hatched and outside the sum, the in-sample gain: the same estimate scored on the agents'
 * own training batches, which the update was fitted to — the optimism a fresh batch removes.
 * A toggle switches between our episodic form and the paper's γ form (§9); the readout says
 * "certified improvement" when the bound is above 0, held / not held, and, when the bound is
 * vacuous, says so in words. Its formula card (formulas.ts `certFormulaId`: episodic, language team-level with either estimator, or γ) writes the
 * same sum with the record's cert/… numbers; a term clicked there outlines its bar here.
 * A language stage's team-level bound is followed by one bar per agent, its share of the fresh gain
 * in the agent's colour, pale and dashed and keyed "diagnostics, not the certificate" (§5.1): with
 * a finite truncation c only the team's bound is a guarantee.
 *
 * Not here: the cumulative arithmetic (series.ts `waterfallRows`), choosing the stage (a prop).
 */
import { memo, useId } from 'react';
import { Bar, BarChart, CartesianGrid, LabelList, Rectangle, ReferenceLine, Tooltip, XAxis, YAxis, type BarShapeProps } from 'recharts';
import { teamBoundEpisodes, type CertForm } from '../../sat/certificate';
import type { StageRecord } from '../../sat/stage';
import { fixed3 } from '../format';
import { agentColor, agentTint, GRID, INK, MUTED_INK, NOT_HELD } from '../theme';
import { ChartFrame, DEFAULT_HEIGHT, Toggle } from './ChartFrame';
import { VerdictGlyph } from './VerdictMark';
import { certifiedLegend, checkPlusMinus, VERDICTS } from '../../sat/verdicts';
import { bindFormula, certFormulaId, FORMULAS } from './formulas';
import { CHECK, grouped, pct, term } from './fmt';
import { waterfallRows, type FormChoice, type HeldState, type Waterfall, type WaterfallRow } from './series';

export interface WaterfallChartProps {
  /** The stage to explain (usually the selected or the latest one); null before the first stage ends. */
  readonly record: StageRecord | null;
  /** Form shown; default the run's configured form. */
  readonly form?: FormChoice;
  /** Called by the γ / episodic toggle; without it the toggle is not shown. */
  readonly onFormChange?: (form: CertForm) => void;
  /** γ of the run (for the words; the terms already use it). */
  readonly gamma?: number;
  /** Horizon H of the episodic form (for the words). */
  readonly horizon?: number;
  /** R_max − R_min: a bound below −span is vacuous. */
  readonly span?: number;
  /** δ_conf of the run, for "with probability ≥ 1 − δ_conf" (words only; default: "high probability"). */
  readonly deltaConf?: number;
  readonly width?: number;
  readonly height?: number;
}

const FILL: Record<WaterfallRow['kind'], string> = {
  insample: MUTED_INK,
  gain: '#4b5563',
  shift: '#9ca3af',
  bias: '#b8bcc2',
  finite: '#cfd2d6',
  lower: INK,
  realised: INK,
  agent: MUTED_INK, // drawn in the agent's own colour (shapeFor)
};

/**
 * The x-axis names, broken so that 7 bars fit a half-width panel (~48 px a bar): only the
 * diagnostic has a third line, so its "(optimistic)" has that row to itself.
 */
const TICK_LINES: Record<WaterfallRow['kind'], readonly string[]> = {
  insample: ['in-sample', 'gain', '(optimistic)'],
  gain: ['fresh', 'gain'],
  shift: ['−shift'],
  bias: ['−bias'],
  finite: ['−finite'],
  lower: ['= bound'],
  realised: ['real ΔJ'],
  agent: ['share'], // under "agent j" (Tick)
};

/** With the per-agent bars (a language stage) a bar has ~40 px: the totals' names on two lines. */
const CROWDED_LINES: Partial<Record<WaterfallRow['kind'], readonly string[]>> = {
  lower: ['=', 'bound'],
  realised: ['real', 'ΔJ'],
};

function shapeFor(held: HeldState, hatch: string, picked: string | null) {
  return function WaterfallBar(p: BarShapeProps) {
    const row = p.payload as WaterfallRow;
    let bar;
    if (row.kind === 'insample') bar = <Rectangle {...p} fill={`url(#${hatch})`} stroke={MUTED_INK} strokeWidth={1} strokeDasharray="3 2" />;
    else if (row.kind === 'realised' && held === 'not held') bar = <Rectangle {...p} fill="#fff" stroke={NOT_HELD} strokeWidth={2} />;
    else if (row.kind === 'realised' && held !== 'held') bar = <Rectangle {...p} fill="#fff" stroke={MUTED_INK} strokeWidth={1.5} strokeDasharray="4 3" />;
    else if (row.kind === 'agent' && row.agent) {
      // A diagnostic, not the certificate: pale and dashed, in the agent's colour.
      const j = row.agent.index;
      return (
        <g data-agent-share={j} data-value={row.value} data-color={agentColor(j)}>
          <Rectangle {...p} fill={agentTint(j, 0.3)} stroke={agentColor(j)} strokeWidth={1.5} strokeDasharray="3 2" />
        </g>
      );
    } else bar = <Rectangle {...p} fill={FILL[row.kind]} stroke="none" />;
    if (row.kind !== picked) return bar;
    // Picked in the formula card: the bar outlined in ink, drawn over a pale halo.
    const { x = 0, y = 0, width = 0, height = 0 } = p as { x?: number; y?: number; width?: number; height?: number };
    return (
      <g data-highlighted={row.kind}>
        <rect x={x - 3} y={Math.min(y, y + height) - 3} width={width + 6} height={Math.abs(height) + 6} fill="rgba(31,35,40,0.08)" stroke={INK} strokeWidth={2} rx={2} />
        {bar}
      </g>
    );
  };
}

/** An x-axis name; the axis' value is the row's label, unique per row. */
function Tick({ x, y, payload, rows }: { x?: number | string; y?: number | string; payload?: { value?: unknown }; rows: readonly WaterfallRow[] }) {
  const row = rows.find((r) => r.label === payload?.value);
  const kind = row?.kind;
  const crowded = rows.some((r) => r.kind === 'agent');
  const lines = row?.agent ? [`agent ${row.agent.index}`, ...TICK_LINES.agent] : kind ? ((crowded && CROWDED_LINES[kind]) || TICK_LINES[kind]) : [String(payload?.value ?? '')];
  const diagnostic = kind === 'insample' || kind === 'agent';
  return (
    <text x={Number(x)} y={Number(y)} textAnchor="middle" fontSize={13} fill={row?.agent ? agentColor(row.agent.index) : diagnostic ? MUTED_INK : INK} fontStyle={diagnostic ? 'italic' : undefined}>
      {lines.map((l, k) => (
        <tspan key={k} x={Number(x)} dy={k === 0 ? '0.9em' : '1.1em'}>
          {l}
        </tspan>
      ))}
    </text>
  );
}

function WfTooltip({ active, payload, wf }: { active?: boolean; payload?: readonly { payload?: unknown }[]; wf: Waterfall }) {
  const row = payload?.[0]?.payload as WaterfallRow | undefined;
  if (!active || !row) return null;
  return (
    <div className="chart-tip">
      <div className="chart-tip-title">{row.label}</div>
      <div>{term(row.value)}</div>
      {row.inSum && (
        <div className="muted">
          {term(row.from)} → {term(row.to)}
        </div>
      )}
      {row.kind === 'insample' && (
        <div className="muted">
          scored on the batches the agents were trained on; not part of the bound
          {Number.isFinite(wf.optimism) ? ` (${wf.optimism >= 0 ? 'above' : 'below'} the fresh gain by ${term(Math.abs(wf.optimism))})` : ''}
        </div>
      )}
      {row.kind === 'gain' && <div className="muted">scored on certification batches no update saw</div>}
      {row.agent && (
        <div className="muted">
          agent {row.agent.index}&apos;s share of the team&apos;s fresh gain (position {row.agent.position + 1} in the order); its own bound {term(row.agent.lower)}. A
          diagnostic, not the certificate: with the ratio truncated only the team-level bound holds.
        </div>
      )}
      {(row.kind === 'shift' || row.kind === 'bias') && wf.form === 'episodic' && <div className="muted">0 by construction in the episodic form</div>}
      {row.kind === 'finite' && wf.form === 'episodic' && <div className="muted">the width of the one-sided confidence bound</div>}
    </div>
  );
}

/**
 * What the bound of a stage rests on, when it is the team-level one (docs/certificate.md §5.1): one
 * certification batch, the effective sample size of its team ratio r̄ and what truncating r̄ at c
 * cost; for a language stage (finite c) each agent's share of the team summand, labelled a
 * diagnostic — the key of the per-agent bars when they are drawn (`bars`); the reason when no
 * certificate was given; and the common-random-numbers estimate of ΔJ when the stage was checked.
 */
function TeamBoundNote({ record, bars }: { record: StageRecord; bars: boolean }) {
  const c = record.certificate;
  const h = record.held;
  const rounds = c.sequential?.looks.length ?? 1;
  return (
    <>
      {c.refused && (
        <span className="chart-warn" data-testid="cert-refused">
          {`No certificate: ${c.refused}`}
        </span>
      )}
      {c.scope === 'team' && c.team && c.team.episodes > 0 && (
        <span data-testid="team-bound" data-episodes={teamBoundEpisodes(c)} title={c.estimator === 'mixture'
          ? 'Certification episodes for the whole stage, in pairs of one episode of the starting team and one of the final team, drawn in rounds until the bound decided (docs/certificate.md §5.3, §5.4), each weighted by the ratio of the final team to the starting team; ESS and truncation cost are those of the first round\u2019s starting-team episodes, on which the per-agent shares are measured. On a language stage the per-agent bars beside it are those shares, shown as diagnostics.'
          : 'Certification episodes for the whole stage, drawn in rounds until the bound decided (docs/certificate.md §5.3), each scored with the ratio of the final team to the starting team (§5.1); ESS and truncation cost are the first round\u2019s. On a language stage the per-agent bars beside it are its shares, shown as diagnostics.'}>
          {`team-level bound: ${grouped(teamBoundEpisodes(c))} episodes${rounds > 1 ? ` in ${rounds} rounds` : ''}${c.estimator === 'mixture' ? ', in pairs of one episode of each team (mixture)' : ''}, ESS ${grouped(c.team.ess)}${rounds > 1 || c.estimator === 'mixture' ? ` of the first round's ${grouped(c.team.episodes)}${c.estimator === 'mixture' ? ' starting-team episodes' : ''}` : ''}, truncation cost ${term(c.team.truncationCost)}`}
        </span>
      )}
      {c.scope === 'team' && c.team && Number.isFinite(record.metrics['cert/clip']) && record.steps.length > 0 && (
        <span data-testid="agent-shares" title="Each agent's share of the team summand, (min(ρ≤i, c) − min(ρ<i, c))·(R − R_min), in the order the agents moved: the shares add up to the team's fresh gain, but with a finite c a share is not a bound on that agent's own ΔJ (docs/certificate.md §5.1).">
          {bars ? 'per-agent bars: diagnostics, not the certificate — ' : 'per-agent shares (diagnostic): '}
          {record.steps.map((s, k) => (
            <span key={s.agent} className="wf-share">
              {bars && <span className="wf-swatch" aria-hidden="true" style={{ background: agentTint(s.agent, 0.3), borderColor: agentColor(s.agent) }} />}
              {`agent ${s.agent} ${term(s.cert.gain)}${k < record.steps.length - 1 ? ', ' : ''}`}
            </span>
          ))}
        </span>
      )}
      {h && h.pairs > 0 && (
        <span data-testid="held-estimate" title="ΔJ estimated with common random numbers: the starting and final teams answer the same prompts with the same sampler draws (docs/certificate.md).">
          {`ΔJ ≈ ${term(h.estimate)} ± ${term(h.se)} (${checkPlusMinus(h.pairs)})`}
        </span>
      )}
    </>
  );
}

export const WaterfallChart = memo(function WaterfallChart({ record, form = 'chosen', onFormChange, gamma, horizon, span, deltaConf, width, height = DEFAULT_HEIGHT }: WaterfallChartProps) {
  const hatch = `wf-hatch-${useId().replace(/[^A-Za-z0-9_-]/g, '')}`;
  const wf = record ? waterfallRows(record, form, span) : null;
  const shown: CertForm = wf ? wf.form : form === 'gamma' ? 'gamma' : 'episodic';
  const formName = shown === 'gamma' ? `γ form${gamma !== undefined ? ` (γ = ${gamma})` : ''}` : `episodic form${horizon !== undefined ? ` (H = ${horizon})` : ''}`;
  const formula = record && wf && wf.form === record.certificate.form ? bindFormula(FORMULAS[certFormulaId(record.metrics, wf.form)], record.metrics) : null;
  const confidence = deltaConf !== undefined && deltaConf > 0 && deltaConf < 1 ? `with probability ≥ ${pct(1 - deltaConf, deltaConf < 0.01 ? 2 : 0)}` : 'with high probability';
  return (
    <ChartFrame
      testid="chart-waterfall"
      title="Where did the promise come from?"
      points={wf ? wf.rows.length : 0}
      width={width}
      empty={<>Step a stage to see its certificate term by term.</>}
      formula={formula}
      formulaNote={record && <>The formula card shows the form the run records (certForm = {record.certificate.form}); switch back to it to see the card.</>}
      actions={
        onFormChange && (
          <Toggle<CertForm>
            label="Certificate form"
            value={shown}
            onChange={onFormChange}
            options={[
              { value: 'episodic', label: 'episodic', title: 'Our certificate: fresh gains on certification batches, no shift or bias term (docs/certificate.md §12)' },
              { value: 'gamma', label: 'γ (paper)', title: "The paper's discounted form, as a control; vacuous at γ = 0.99 (docs/certificate.md §9)" },
            ]}
          />
        )
      }
      readout={
        wf && (
          <>
            <span>
              stage {record!.stage}, {formName}
            </span>
            <span>
              lower bound <b className="num" {...(formula ? { 'data-metric': 'cert/lower', 'data-value': wf.terms.lower } : {})}>{term(wf.terms.lower)}</b> vs{' '}
              {record!.evaluation.exact ? 'realised ΔJ' : 'held-out ΔJ (an estimate)'}{' '}
              <b className="num" data-metric="team/dJ" data-value={record!.metrics['team/dJ'] as number}>{term(wf.dJ)}</b>
            </span>
            <TeamBoundNote record={record!} bars={wf.agentShares} />
            {wf.certified && (
              <span className="chart-certified" data-testid="certified-note" title={`${deltaConf !== undefined ? certifiedLegend(deltaConf, record!.evaluation.exact) : `The bound is above 0: ${confidence} the team improved this stage`} (docs/certificate.md §12)`}>
                <span aria-hidden="true">{CHECK}</span> certified improvement
              </span>
            )}
            <span className="chart-held">
              <VerdictGlyph verdict={wf.held} /> {VERDICTS[wf.held].words}
            </span>
            {wf.vacuous && (
              <span className="chart-warn" data-testid="vacuous-note">
                Vacuous: the bound only promises J will not fall by more than {grouped(-wf.terms.lower)}
                {span !== undefined ? `, while J can move by at most ${fixed3(span)}` : ''}
                {Number.isFinite(wf.penaltyOverGain) ? `; the penalties are ${grouped(wf.penaltyOverGain)}× the gain` : ''}.
                {shown === 'gamma' ? ' This is the paper’s γ form as written; the episodic form is the usable one.' : ''}
              </span>
            )}
          </>
        )
      }
      howTo={
        <>
          The hatched bar is the in-sample gain: each agent&apos;s gain scored on the very batch it was trained on — optimistic,
          since the update was fitted to that data, and not part of the bound. The bound starts from the fresh gain: the same
          trajectory-ratio estimate (docs/certificate.md §3) on a certification batch no update ever saw (§4). Then −shift and
          −bias, both 0 by construction in our episodic form because the ratio is exact (§6) and large only in the paper&apos;s γ
          form (§9); then −finite, the width of the one-sided confidence bound on the fresh gain (§5; the team-level form scores one batch for the whole stage with the team's ratio, §5.1). What is left is the lower bound on
          ΔJ, {confidence} (§12), beside the ΔJ that really happened. Healthy: bound above 0 (certified improvement) and the real
          bar at least as tall (held, filled).
          {wf?.agentShares && (
            <>
              {' '}
              On a language stage the pale, dashed bars after the real ΔJ are each agent&apos;s share of the fresh gain, in
              its colour and in the order the agents moved: they add up to the fresh gain, but with the ratio truncated at c a
              share is not a bound on that agent&apos;s own ΔJ — diagnostics of who contributed, not the certificate (§5.1).
            </>
          )}
        </>
      }
    >
      {(w, picked) =>
        wf && (
          <BarChart width={w} height={height} data={wf.rows} margin={{ top: 18, right: 16, bottom: 4, left: 4 }}>
            <defs>
              <pattern id={hatch} width={6} height={6} patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
                <rect width={6} height={6} fill="#fff" />
                <line x1={0} y1={0} x2={0} y2={6} stroke={MUTED_INK} strokeWidth={2} strokeOpacity={0.55} />
              </pattern>
            </defs>
            <CartesianGrid stroke={GRID} vertical={false} />
            <XAxis dataKey="label" tickLine={false} stroke={MUTED_INK} fontSize={13} interval={0} height={46} tick={<Tick rows={wf.rows} />} />
            <YAxis tickFormatter={(v: number) => term(v)} width={64} stroke={MUTED_INK} fontSize={13} {...(wf.rows.every((r) => r.value === 0 || !Number.isFinite(r.value)) ? { domain: [-1, 1], ticks: [-1, 0, 1] } : {})} />
            <ReferenceLine y={0} stroke={MUTED_INK} />
            <Tooltip content={<WfTooltip wf={wf} />} cursor={{ fill: 'rgba(0,0,0,0.04)' }} />
            <Bar dataKey="range" shape={shapeFor(wf.held, hatch, picked)} isAnimationActive={false}>
              <LabelList dataKey="value" position="top" fontSize={13} fill={INK} formatter={(v: unknown) => (typeof v === 'number' ? term(v) : '')} />
            </Bar>
          </BarChart>
        )
      }
    </ChartFrame>
  );
});
