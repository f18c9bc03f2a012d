/**
 * The timeline and the charts grid, wired to the store: what each chart is given and where it
 * comes from. The step in view (the timeline's selection, else the latest) drives the advantage,
 * KL and transcript views; the stage in view drives the waterfall; the side runs start from
 * buttons here (sideRuns.ts); a link's `<panel>_hide` flags (panels.ts) leave panels out. The J
 * chart and the game view follow the store at once (the first screen); the charts below draw from
 * a deferred copy, and off screen not at all while a step runs (`OffScreenGate`), so a step shows
 * without waiting for six plots. The grid carries `data-pending` while anything lags the store.
 *
 * Not here: any maths (charts/series.ts) or drawing details (each chart's own file).
 */
import { memo, type ReactElement, startTransition, useDeferredValue, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import type { StageRecord, AgentStepRecord } from '../../sat/stage';
import type { CertForm } from '../../sat/certificate';
import { lazyCharts } from '../charts/lazy';
import { findStep, lastStepRef, partialStage, toStepRef, transcriptRows, violationPointsFromStages } from '../charts/series';
import { Timeline as TimelineView } from './Timeline';
import { useSession } from '../sessionContext';
import { compareOrders, compareOrdersTitle, compareSimultaneous, compareSimultaneousTitle, sweepDeltas, sweepDeltasTitle } from '../sideRuns';
import { isLlmTask } from '../../sat/config';
import { tableGame } from '../../sat/experiment';
import { frameAt } from '../gameFrame';
import { shown, type PanelName } from '../panels';
import { TableGameView, TranscriptGameView } from './GameView';
import { select, usePlayground } from '../store';
import { SwapCard } from './SwapCard';
import { useGenerations } from './runLogState';

const Timeline = memo(TimelineView);
const { AdvantageChart, BetaChart, JChart, KlChart, OrderChart, TranscriptTable, ViolationChart, WaterfallChart } = lazyCharts;

/** The share of a chart's box that must be in the window for it to count as on screen. */
const SEEN_RATIO = 0.05;

/**
 * Draws `children` while its box is on screen (an IntersectionObserver); off screen it keeps the
 * element it last drew — React then skips the whole chart — and catches up in idle time once
 * `quiet` (no step or Run in progress); while `measure` (Run going) its box is also measured after
 * every commit. `data-pending` marks a drawing older than its data, `data-offscreen` a box out of view.
 */
function OffScreenGate({ children, quiet, measure }: { children: ReactElement; quiet: boolean; measure: boolean }) {
  const box = useRef<HTMLDivElement | null>(null);
  const [onScreen, setOnScreen] = useState(true);
  const [catchUp, setCatchUp] = useState<ReactElement | null>(null);
  const drawn = useRef(children);
  if (onScreen || catchUp === children) drawn.current = children;
  const stale = drawn.current !== children;
  useEffect(() => {
    const el = box.current;
    if (!el || typeof IntersectionObserver === 'undefined') return;
    // A sliver at the window's edge (a chart's title just peeking in) does not count as seen.
    const io = new IntersectionObserver((entries) => {
      const e = entries[entries.length - 1];
      if (e) setOnScreen(e.isIntersecting && e.intersectionRatio >= SEEN_RATIO);
    }, { threshold: [0, SEEN_RATIO] });
    io.observe(el);
    return () => io.disconnect();
  }, []);
  // While Run goes, the box is measured after each commit too, before the deferred render that
  // would redraw the chart: the observer reports a box that this commit pushed out of the window
  // (the timeline growing by its first stage) only after that redraw, wasted. (Not for a single
  // step: measuring forces a layout in each of its commits, and its redraw is one.)
  useLayoutEffect(() => {
    const el = box.current;
    if (!measure || !el || typeof innerHeight === 'undefined') return;
    const r = el.getBoundingClientRect();
    const w = Math.max(0, Math.min(r.right, innerWidth) - Math.max(r.left, 0));
    const h = Math.max(0, Math.min(r.bottom, innerHeight) - Math.max(r.top, 0));
    const seen = r.width > 0 && r.height > 0 && (w * h) / (r.width * r.height) >= SEEN_RATIO;
    if (seen !== onScreen) setOnScreen(seen);
  });
  useEffect(() => {
    if (!stale || !quiet) return;
    const want = children;
    const draw = () => startTransition(() => setCatchUp(want));
    if (typeof requestIdleCallback === 'function') {
      const id = requestIdleCallback(draw, { timeout: 500 });
      return () => cancelIdleCallback(id);
    }
    const id = setTimeout(draw, 0);
    return () => clearTimeout(id);
  }, [stale, quiet, children]);
  return (
    <div ref={box} className="chart-gate" data-pending={stale ? 1 : undefined} data-offscreen={onScreen ? undefined : 1}>
      {drawn.current}
    </div>
  );
}

/** The stage in progress, the step in view and that step's record, for one copy of the run. */
function useInView(stages: readonly StageRecord[], partial: readonly AgentStepRecord[], selected: Parameters<typeof toStepRef>[2] | null) {
  const current = useMemo(() => partialStage(partial), [partial]);
  const ref = useMemo(() => (selected ? toStepRef(stages, current, selected) : lastStepRef(stages, current)), [stages, current, selected]);
  const step = useMemo(() => findStep(stages, current, ref), [stages, current, ref]);
  return { current, ref, step };
}

export function ChartsPanel() {
  const session = useSession();
  const stagesNow = usePlayground((s) => s.stages);
  const partialNow = usePlayground((s) => s.partial);
  const selectedNow = usePlayground((s) => s.selected);
  const cfg = usePlayground((s) => s.config);
  const nAgents = usePlayground((s) => s.agents.length);
  const j0 = usePlayground((s) => s.j0);
  const orders = usePlayground((s) => s.orders);
  const sweep = usePlayground((s) => s.sweep);
  const transcriptsNow = usePlayground((s) => s.transcripts);
  const span = usePlayground((s) => s.span);
  const horizon = usePlayground((s) => s.horizon);
  const status = usePlayground((s) => s.status);
  const frames = usePlayground((s) => s.frames);
  const simultaneous = usePlayground((s) => s.simultaneous);
  const previous = usePlayground((s) => s.previous);
  const hide = usePlayground((s) => s.hide);
  const dump = useGenerations((s) => s.dump);
  const opened = useGenerations((s) => s.opened);
  const [form, setForm] = useState<CertForm | null>(null);
  const busy = status === 'busy' || status === 'running' || status === 'loading';
  const quiet = !busy;

  // The first screen's view of the run, now.
  const now = useInView(stagesNow, partialNow, selectedNow);
  // The charts below it: the same, deferred (a render the browser may interrupt; when steps come
  // faster than they draw, they skip to the newest stage instead of queueing).
  const stages = useDeferredValue(stagesNow);
  const partial = useDeferredValue(partialNow);
  const selected = useDeferredValue(selectedNow);
  const transcripts = useDeferredValue(transcriptsNow);
  const pending = stages !== stagesNow || partial !== partialNow || selected !== selectedNow || transcripts !== transcriptsNow;
  const { current, ref, step } = useInView(stages, partial, selected);
  const stageInView = useMemo(() => stages.find((r) => r.stage === ref?.stage) ?? stages[stages.length - 1] ?? null, [stages, ref]);
  const violation = useMemo(() => violationPointsFromStages(stages, 'this run', current), [stages, current]);
  const batch = useMemo(() => {
    if (!ref) return transcripts[transcripts.length - 1] ?? null;
    return transcripts.find((b) => b.stage === ref.stage && b.before === step?.position) ?? transcripts[transcripts.length - 1] ?? null;
  }, [transcripts, ref, step]);
  const rows = useMemo(() => transcriptRows(batch, stages, { current, limit: Infinity }), [batch, stages, current]);
  // The batch shown is the one the step in view trained on (not a fallback): its rows open in the inspector.
  const linked = !!(batch && ref && step && batch.stage === ref.stage && batch.before === step.position);
  const exp = session.currentExperiment();
  const game = frames.length > 0 && exp ? tableGame(exp) : null;
  // The J chart and the game view follow the store at once, in the same render and paint as the
  // timeline: Run puts what it did into the store only a few times a second (session.ts), so a
  // deferred copy for them would only add a second commit, layout and paint to each of its draws.
  const running = status === 'running';
  const firstStep = now.step;
  const firstRecords = stagesNow;
  const frame = useMemo(() => (firstStep ? frameAt(frames, firstStep.stage, firstStep.position) : frames[frames.length - 1] ?? null), [frames, firstStep]);
  const certForm = form ?? cfg?.certForm ?? 'chosen';
  const scheme = cfg?.scheme;
  const where = firstStep ? `stage ${firstStep.stage}, after agent ${firstStep.agent}${scheme === 'simultaneous' ? ' (joint step)' : ''}` : 'the initial team';
  const llm = cfg ? isLlmTask(cfg.task) : false;
  // Each chart's element is kept while its inputs are the same, so a render of this panel for
  // something else (the status flipping to busy and back around every step) redraws none of them,
  // and an off-screen gate does not count an unchanged chart as lagging.
  // One dashed run at a time: the simultaneous one when asked for, else the run before the last Apply.
  const overlay = simultaneous ?? previous;
  const jChart = useMemo(() => <JChart records={firstRecords} form={certForm} span={span} j0ci={j0?.ci} overlay={overlay ?? undefined} deltaConf={cfg?.deltaConf} />, [firstRecords, certForm, span, j0?.ci, overlay, cfg?.deltaConf]);
  const gameView = useMemo(() => (game ? <TableGameView game={game} frame={frame} where={where} still={running} /> : null), [game, frame, where, running]);
  const swapCard = useMemo(() => <SwapCard records={stages} maxNew={llm && cfg ? cfg.maxNew : null} span={span} lowestJ={llm ? 0 : null} />, [stages, llm, cfg, span]);
  const gamma = cfg?.gamma ?? 0;
  const deltaConf = cfg?.deltaConf ?? 0;
  const aClip = cfg?.aClip ?? 0;
  const alpha = cfg?.alpha ?? 0;
  const waterfall = useMemo(() => <WaterfallChart record={stageInView} form={certForm} onFormChange={setForm} gamma={gamma} horizon={horizon} span={span} deltaConf={deltaConf} />, [stageInView, certForm, gamma, horizon, span, deltaConf]);
  const advantages = useMemo(() => <AdvantageChart step={step} aClip={aClip} />, [step, aClip]);
  const kl = useMemo(() => <KlChart step={step} alpha={alpha} />, [step, alpha]);
  const beta = useMemo(() => <BetaChart records={stages} current={current} nAgents={nAgents} />, [stages, current, nAgents]);
  const violationChart = useMemo(() => <ViolationChart points={violation} sweep={sweep} step={step} language={llm} />, [violation, sweep, step, llm]);
  const orderChart = useMemo(() => <OrderChart series={orders} form={certForm} />, [orders, certForm]);
  if (!cfg) return null;
  const on = (name: PanelName) => shown(hide, name);

  return (
    <>
      {on('timeline') && (
        <section className="timeline-section" aria-label="Timeline" data-panel="timeline">
          <Timeline nAgents={nAgents} records={stagesNow} current={now.current} selected={selectedNow} onSelect={select} joint={cfg.scheme === 'simultaneous'} />
        </section>
      )}
      {(on('j') || on('game')) && (
        <div className="first-row">
          {on('j') && (
            <div className="chart-with-action" data-panel="j">
              {jChart}
              {(cfg.scheme === 'sequential' || previous) && (
                <div className="chart-actions">
                  {previous && !simultaneous && stagesNow.length === 0 && (
                    <span className="muted" data-testid="previous-kept">
                      Kept: the run {previous.label} ({previous.stages.length} stage{previous.stages.length === 1 ? '' : 's'}, J {previous.stages[previous.stages.length - 1]!.jAfter.toFixed(3)}), drawn dashed once this run has a stage.
                    </span>
                  )}
                  {previous && !simultaneous && (
                    <button type="button" className="small" data-testid="dismiss-previous" onClick={() => usePlayground.setState({ previous: null })} title={`The run before your last Apply, ${previous.stages.length} stage${previous.stages.length === 1 ? '' : 's'}, drawn dashed`}>
                      Dismiss the run before Apply ×
                    </button>
                  )}
                  {cfg.scheme === 'sequential' && <button type="button" className="small" data-testid="compare-simultaneous" disabled={busy || llm || simultaneous !== null} onClick={() => void compareSimultaneous(session)} title={compareSimultaneousTitle(cfg)}>
                    {simultaneous ? 'Simultaneous shown (dashed)' : 'Overlay simultaneous'}
                  </button>}
                </div>
              )}
            </div>
          )}
          {on('game') && (llm ? <TranscriptGameView row={rows[0] ?? null} where={batch ? `stage ${batch.stage}, batch of agent step ${batch.before + 1}` : ''} /> : gameView)}
        </div>
      )}
      {stageInView && stageInView.steps.length > 0 && stageInView.steps.every((x) => !x.accepted) && (
        <p className="notice stage-still" data-testid="stage-still">
          Nothing moved in stage {stageInView.stage}: every agent&apos;s update left its trust region (KL above its δ) even after {cfg.maxBacktracks} backtrack
          {cfg.maxBacktracks === 1 ? '' : 's'}, so each kept its policy (π_cur, onExhausted = {cfg.onExhausted}) and J did not change — the trust region
          doing its job, not a fault.
          {cfg.betaAdapt ? ' β grew with every backtrack and carries to the next stage, so the next steps are smaller.' : ''} For movement from stage 1, lower lr or
          raise δ and Apply.
        </p>
      )}
      {swapCard}
      <div className="charts-grid" data-testid="charts-grid" data-pending={pending ? 1 : undefined}>
        {on('waterfall') && (
          <OffScreenGate quiet={quiet} measure={running}>
            {waterfall}
          </OffScreenGate>
        )}
        {on('advantages') && (
          <OffScreenGate quiet={quiet} measure={running}>
            {advantages}
          </OffScreenGate>
        )}
        {on('kl') && (
          <OffScreenGate quiet={quiet} measure={running}>
            {kl}
          </OffScreenGate>
        )}
        {on('beta') && (
          <OffScreenGate quiet={quiet} measure={running}>
            {beta}
          </OffScreenGate>
        )}
        {on('violation') && (
          <div className="chart-with-action" data-panel="violation">
            <OffScreenGate quiet={quiet} measure={running}>
              {violationChart}
            </OffScreenGate>
            <div className="chart-actions">
              <button type="button" className="small" data-testid="sweep-delta" disabled={busy} onClick={() => void sweepDeltas(session)} title={sweepDeltasTitle(cfg)}>
                Sweep δ
              </button>
            </div>
          </div>
        )}
        {on('orders') && (
          <div className="chart-with-action" data-panel="orders">
            <OffScreenGate quiet={quiet} measure={running}>
              {orderChart}
            </OffScreenGate>
            <div className="chart-actions">
              <button type="button" className="small" data-testid="compare-orders" disabled={busy} onClick={() => void compareOrders(session)} title={compareOrdersTitle(cfg, stages.length)}>
                Compare orders
              </button>
            </div>
          </div>
        )}
      </div>
      {((on('transcripts') && transcripts.length > 0) || dump) && (
        <TranscriptTable
          key={opened}
          rows={rows}
          caption={batch ? `Stage ${batch.stage}: episodes agent step ${batch.before + 1} of σ trained on` : undefined}
          groupSize={cfg.group}
          onSelectStep={select}
          step={ref}
          linked={linked}
          imported={dump}
          onCloseImported={() => useGenerations.setState({ dump: null })}
        />
      )}
    </>
  );
}
