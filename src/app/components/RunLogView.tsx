/**
 * A real run's log in the playground: the view of an imported run (verl, TeamTR, a W&B history,
 * the SAT authors' trainer; src/bridge/runLog.ts) with the charts the playground draws for its own
 * runs — J per step, each agent's KL against its δ with the violation rate, the clip fraction and
 * the timeline of agent updates — each chart saying why when the log cannot feed it
 * (src/bridge/runLogSeries.ts). The run is shared like an experiment: as a `.satrun.json` file,
 * or as a `?run=` link where its data fits (src/bridge/runLogFile.ts). A bad or partial log gets
 * a specific message and the experiment on the page is not touched.
 *
 * The charts' rows come from the check's worker as columns, thinned to what is drawn
 * (src/bridge/runLogCharts.ts): this thread turns at most CHART_POINTS of them a chart into rows
 * for recharts, never one per step of a long log.
 *
 * Not here: parsing or the charts' rows (src/bridge), the playground's own charts (../charts).
 */
import { useEffect, useMemo, useRef, useState } from 'react';
import { CartesianGrid, type CartesianGridProps, Line, LineChart, ReferenceLine, Tooltip, XAxis, YAxis } from 'recharts';
import { runLogParam, runLogText, RUN_FILE_EXTENSION } from '../../bridge/runLogFile';
import type { RunLog } from '../../bridge/runLog';
import { J_SERIES, type DrawnColumns, type OpenedRun } from '../../bridge/runLogCharts';
import { engineLabel, thinText, type ThinNote } from '../../bridge/runLogSeries';
import { ChartFrame, DEFAULT_HEIGHT } from '../charts/ChartFrame';
import { agentColor, GRID, INK, MUTED_INK, NOT_HELD } from '../theme';
import { usePlayground } from '../store';
import { useRunLog } from './runLogState';

const fmt = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '—' : Math.abs(x) !== 0 && Math.abs(x) < 1e-3 ? x.toExponential(2) : x.toFixed(4));

/** A y-axis tick as short text: three significant digits, an exponent below 0.01 or from 100,000 (so a label never outgrows its axis). */
export function tickText(x: number): string {
  if (x === 0 || !Number.isFinite(x)) return String(x);
  const a = Math.abs(x);
  return (a < 0.01 || a >= 1e5 ? x.toExponential(1) : String(Number(x.toPrecision(3)))).replace(/-/g, '\u2212');
}

/**
 * The y axis's width in px for `values`: its longest tick label at the page's font size (16 px in
 * projector mode, else 13), plus the tick mark. Ticks lie inside the values' range, and tickText
 * keeps each to at most seven characters, so the extremes and the longest form bound them.
 */
export function axisWidth(values: readonly number[], projector: boolean): number {
  const finite = values.filter(Number.isFinite);
  const chars = Math.max(4, ...finite.map((v) => tickText(v).length), finite.some((v) => v !== 0 && Math.abs(v) < 0.01) ? 7 : 0, finite.some((v) => v < 0) ? 6 : 0);
  return Math.ceil(chars * (projector ? 16 : 13) * 0.62) + 14;
}

/** "step 4: J 0.5625 train reward 0.5125": the last step's values, for the readout above the J chart. */
function lastJReadout(r: { step: number; J?: number; train?: number; lower?: number }): string {
  const parts = [r.J !== undefined && `J ${fmt(r.J)}`, r.train !== undefined && `train reward ${fmt(r.train)}`, r.lower !== undefined && `lower bound ${fmt(r.lower)}`].filter(Boolean);
  return `step ${r.step}: ${parts.join(' ')}`;
}

/** Each agent's δ and violation rate where the engine has a radius, else the last step's KLs. */
function klReadout(kl: { last: readonly number[] | null; deltas: readonly (number | null)[]; violationRate: readonly (number | null)[] }): string {
  if (kl.violationRate.every((v) => v === null)) return `last: ${kl.last?.map(fmt).join(', ') ?? '—'}`;
  return kl.violationRate.map((v, i) => (v === null ? null : `agent ${i}: δ ${fmt(kl.deltas[i] ?? undefined)}, violation rate ${(v * 100).toFixed(1)} %`)).filter(Boolean).join('; ');
}

/**
 * The J chart's rows for recharts from its drawn columns (at most CHART_POINTS: the worker thinned
 * them), a value only where its series has one.
 */
function jRows(d: DrawnColumns): { step: number; J?: number; train?: number; lower?: number }[] {
  const n = d.steps.length;
  return Array.from(d.steps, (step, k) => {
    const row: { step: number; J?: number; train?: number; lower?: number } = { step };
    J_SERIES.forEach((key, s) => {
      const v = d.values[s * n + k]!;
      if (Number.isFinite(v)) row[key] = v;
    });
    return row;
  });
}

/** A per-agent chart's rows for recharts from its drawn columns: `a<i>` each agent's value, null where none. */
function agentRows(d: DrawnColumns): Record<string, number | null>[] {
  const n = d.steps.length;
  return Array.from(d.steps, (step, k) => {
    const row: Record<string, number | null> = { step };
    for (let s = 0; s < d.width; s++) {
      const v = d.values[s * n + k]!;
      row[`a${s}`] = Number.isFinite(v) ? v : null;
    }
    return row;
  });
}

/** The finite values of drawn columns (for the y axis' width). */
const finiteValues = (d: DrawnColumns): number[] => Array.from(d.values).filter(Number.isFinite);

/** Under a thinned chart: what it draws of the steps (thinText). */
function ThinLabel({ note, testid }: { note: ThinNote | null; testid: string }) {
  return note && <span className="runlog-thinned" data-testid={`${testid}-thinned`}>{thinText(note)}</span>;
}

function save(log: RunLog) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([runLogText(log)], { type: 'application/json' }));
  a.download = `${log.name.replace(/\.[^.]*$/, '')}${RUN_FILE_EXTENSION}`;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

async function copyLink(log: RunLog) {
  const p = runLogParam(log);
  if (!p) {
    usePlayground.setState({ notice: 'This run is too long for a link: share its file (Save run) instead.' });
    return;
  }
  const url = `${location.origin}${location.pathname}?run=${p}`;
  try {
    await navigator.clipboard.writeText(url);
    usePlayground.setState({ notice: 'Link to this imported run copied.' });
  } catch {
    usePlayground.setState({ notice: `Copy this link: ${url}` });
  }
}

/**
 * Where the grid's vertical lines go: at the step axis' ticks and the plot's edges, as recharts'
 * own generator places them with every tick shown (interval 0). recharts first asks before the
 * XAxis has registered, with a stand-in category axis of one tick per row, and would measure each
 * row's label in the DOM (a forced layout each: seconds on the main thread for a long log); that
 * pass gets no lines, the next one the axis' own.
 */
const gridX: NonNullable<CartesianGridProps['verticalCoordinatesGenerator']> = ({ xAxis, offset }) => {
  if (xAxis?.type !== 'number' || !xAxis.scale) return [];
  const { scale } = xAxis;
  const at = (xAxis.ticks ?? xAxis.niceTicks ?? []).map((v) => scale.map(v)).filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
  const [lo, hi] = [offset.left, offset.left + offset.width];
  return [...at, ...(at.includes(lo) ? [] : [lo]), ...(at.includes(hi) ? [] : [hi])];
};

/** Per-agent lines of a chart whose rows hold one array per step (NaN: no value there). */
function AgentLines({ drawn, agents, width, deltas, projector }: { drawn: DrawnColumns; agents: number; width: number; deltas?: readonly (number | null)[]; projector: boolean }) {
  const data = agentRows(drawn);
  const values = [...finiteValues(drawn), ...(deltas ?? []).filter((d): d is number => d !== null)];
  return (
    <LineChart width={width} height={DEFAULT_HEIGHT} data={data} margin={{ top: 8, right: 12, bottom: 4, left: 0 }}>
      <CartesianGrid stroke={GRID} verticalCoordinatesGenerator={gridX} />
      <XAxis dataKey="step" type="number" domain={['dataMin', 'dataMax']} allowDecimals={false} interval={0} />
      <YAxis width={axisWidth(values, projector)} tickFormatter={tickText} interval={0} />
      <Tooltip isAnimationActive={false} />
      {Array.from({ length: agents }, (_, i) => (
        <Line key={i} dataKey={`a${i}`} name={agents > 1 ? `agent ${i}` : 'policy'} stroke={agentColor(i)} dot={data.length < 40} isAnimationActive={false} connectNulls />
      ))}
      {deltas?.map((d, i) => (d !== null ? <ReferenceLine key={`d${i}`} y={d} stroke={agentColor(i)} strokeDasharray="5 4" label={{ value: `δ${agents > 1 ? i : ''}`, position: 'right', fontSize: 13 }} /> : null))}
    </LineChart>
  );
}

/**
 * The open run's view; mounted by RunLogSlot (./runLogState) only while a run is open. Each run
 * opened scrolls the view to the top of the window, so its charts are the first thing seen.
 */
export function RunLogView() {
  const run = useRunLog((s) => s.run);
  const projector = usePlayground((s) => s.projector);
  const box = useRef<HTMLElement | null>(null);
  useEffect(() => {
    if (run) box.current?.scrollIntoView({ block: 'start' });
  }, [run]);
  // recharts draws on this thread: the view comes first, then the J, KL and clip charts each in a
  // task of its own (`plots`: how many are drawn), so no one task does it all.
  const [staged, setStaged] = useState<{ run: OpenedRun | null; plots: number }>({ run: null, plots: 0 });
  const plots = staged.run === run ? staged.plots : 0;
  useEffect(() => {
    if (!run || plots >= 3) return;
    const t = setTimeout(() => setStaged({ run, plots: plots + 1 }), 0);
    return () => clearTimeout(t);
  }, [run, plots]);
  // The charts' rows for recharts, from the columns the worker drew (at most CHART_POINTS a chart), once per opened run.
  const rows = useMemo(() => {
    if (!run) return null;
    const { j, kl, clip } = run.charts;
    const hasLine = (s: number) => 'reason' in j ? false : j.values.subarray(s * j.steps.length, (s + 1) * j.steps.length).some(Number.isFinite);
    return {
      j: 'reason' in j ? null : jRows(j),
      jValues: 'reason' in j ? [] : finiteValues(j),
      jLines: { J: hasLine(0), train: hasLine(1), lower: hasLine(2) },
      kl: 'reason' in kl ? null : kl,
      clip: 'reason' in clip ? null : clip,
    };
  }, [run]);
  if (!run || !rows) return null;
  const { log } = run;
  const { j, kl, clip, timeline: tl } = run.charts;
  const agents = Math.max(log.agents, 1);
  const jDrawn = 'reason' in j ? null : j;
  return (
    <section ref={box} className="runlog" data-testid="runlog" aria-label={`Imported run ${log.name}`}>
      <header className="runlog-head">
        <h2>
          Imported run: {log.name} <span className="muted">({log.format}, {engineLabel(log)}, {log.steps.length} steps{log.agents > 0 ? `, ${log.agents} agents` : ''}{log.warnings.length > 0 ? `; ${log.warnings.length} line${log.warnings.length > 1 ? 's' : ''} skipped, listed under the charts` : ''})</span>
        </h2>
        <div className="runlog-actions">
          <button type="button" className="small" data-testid="runlog-save" onClick={() => save(log)}>Save run</button>
          <button type="button" className="small" data-testid="runlog-link" onClick={() => void copyLink(log)}>Copy link</button>
          <button type="button" className="small" data-testid="runlog-close" onClick={() => useRunLog.setState({ run: null })}>Close</button>
        </div>
      </header>
      <div className="charts-grid">
        <ChartFrame
          testid="run-j"
          title="Did the run improve?"
          points={jDrawn ? jDrawn.steps.length : 0}
          empty={'reason' in j ? j.reason : 'No steps.'}
          readout={jDrawn?.last && <><span data-testid="run-j-last">{lastJReadout(jDrawn.last)}</span><ThinLabel note={jDrawn.thin} testid="run-j" /></>}
          howTo={<>J is the validation score per step (dark), beside the training batch's mean reward (grey); for the SAT authors' trainer, its certificate's lower bound per stage. {jDrawn?.note}</>}
        >
          {(w) =>
            jDrawn && rows.j && plots > 0 && (
              <LineChart width={w} height={DEFAULT_HEIGHT} data={rows.j} margin={{ top: 8, right: 12, bottom: 4, left: 0 }}>
                <CartesianGrid stroke={GRID} verticalCoordinatesGenerator={gridX} />
                <XAxis dataKey="step" type="number" domain={['dataMin', 'dataMax']} allowDecimals={false} interval={0} />
                <YAxis width={axisWidth(rows.jValues, projector)} tickFormatter={tickText} interval={0} />
                <Tooltip isAnimationActive={false} />
                {/* a thinned chart leaves out a line with no value (each line costs recharts a pass over the rows) */}
                {(jDrawn.thin === null || rows.jLines.J) && <Line dataKey="J" name="J (validation)" stroke={INK} dot={jDrawn.thin === null} connectNulls isAnimationActive={false} />}
                {(jDrawn.thin === null || rows.jLines.train) && <Line dataKey="train" name="train reward" stroke={MUTED_INK} strokeDasharray="4 3" dot={false} connectNulls isAnimationActive={false} />}
                {(jDrawn.thin === null || rows.jLines.lower) && <Line dataKey="lower" name="lower bound" stroke={MUTED_INK} dot={jDrawn.thin === null} connectNulls isAnimationActive={false} />}
              </LineChart>
            )
          }
        </ChartFrame>
        <ChartFrame
          testid="run-kl"
          title="How far did each agent move?"
          points={rows.kl ? rows.kl.steps.length : 0}
          empty={'reason' in kl ? kl.reason : 'No steps.'}
          readout={rows.kl && <><span data-testid="run-kl-readout">{klReadout(rows.kl)}</span><ThinLabel note={rows.kl.thin} testid="run-kl" /></>}
          howTo={<>Each agent's KL per step in its colour, its radius δ dashed where the engine has one. {rows.kl?.what}</>}
        >
          {(w) => rows.kl && plots > 1 && <AgentLines drawn={rows.kl} agents={agents} width={w} deltas={rows.kl.deltas} projector={projector} />}
        </ChartFrame>
        <ChartFrame
          testid="run-clip"
          title="How often was the ratio clipped?"
          points={rows.clip ? rows.clip.steps.length : 0}
          empty={'reason' in clip ? clip.reason : 'No steps.'}
          readout={rows.clip && <><span data-testid="run-clip-last">last: {rows.clip.last?.map(fmt).join(', ')}</span><ThinLabel note={rows.clip.thin} testid="run-clip" /></>}
          howTo="The share of tokens whose ratio was clipped (actor/pg_clipfrac), per agent: a rising share means updates push against the clip range."
        >
          {(w) => rows.clip && plots > 2 && <AgentLines drawn={rows.clip} agents={agents} width={w} projector={projector} />}
        </ChartFrame>
        <ChartFrame
          testid="run-timeline"
          title="Who was updated, in which order?"
          points={'rows' in tl ? tl.count : 0}
          empty={'reason' in tl ? tl.reason : 'No steps.'}
          howTo={<>One row per step: the agents in the order they were updated; a red ring marks an update whose retries ran out outside δ, the number of backtracks beside it. {'rows' in tl && tl.note}</>}
        >
          {() =>
            'rows' in tl && (
              <ol className="runlog-timeline" data-testid="run-timeline-rows">
                {tl.rows.map((r) => (
                  <li key={r.step} data-step={r.step}>
                    <span className="muted">step {r.step}</span>{' '}
                    {r.updates.map((u, i) => (
                      <span key={i} className="runlog-chip" style={{ borderColor: u.violated ? NOT_HELD : agentColor(u.agent), color: agentColor(u.agent) }} title={u.violated ? 'retries ran out outside δ' : undefined}>
                        {u.agent}
                        {u.backtracks > 0 ? <sup>{u.backtracks}</sup> : null}
                      </span>
                    ))}
                  </li>
                ))}
              </ol>
            )
          }
        </ChartFrame>
      </div>
      {log.warnings.length > 0 && (
        <ul className="runlog-warnings muted" data-testid="runlog-warnings">
          {log.warnings.map((w, i) => <li key={i}>skipped: {w}</li>)}
        </ul>
      )}
    </section>
  );
}
