/**
 * The timeline and the charts grid, wired to the store: what each chart is given and where it
 * comes from. The step in view (the timeline's selection, else the latest step) drives the
 * advantage, KL and transcript views; the stage in view drives the waterfall. The order
 * comparison and δ sweep run on demand (sideRuns.ts) from the buttons here.
 *
 * Not here: any maths (charts/series.ts) or drawing details (each chart's own file).
 */
import { useMemo, useState } from 'react';
import type { CertForm } from '../../sat/certificate';
import {
  AdvantageChart,
  BetaChart,
  JChart,
  KlChart,
  OrderChart,
  Timeline,
  TranscriptTable,
  ViolationChart,
  WaterfallChart,
  findStep,
  lastStepRef,
  partialStage,
  toStepRef,
  transcriptRows,
  violationPointsFromStages,
} from '../charts';
import { useSession } from '../sessionContext';
import { compareOrders, compareOrdersTitle, sweepDeltas, sweepDeltasTitle } from '../sideRuns';
import { select, usePlayground } from '../store';
import { SwapCard } from './SwapCard';
import { TokenInspector } from './TokenInspector';

export function ChartsPanel() {
  const session = useSession();
  const stages = usePlayground((s) => s.stages);
  const partial = usePlayground((s) => s.partial);
  const selected = usePlayground((s) => s.selected);
  const cfg = usePlayground((s) => s.config);
  const nAgents = usePlayground((s) => s.agents.length);
  const j0 = usePlayground((s) => s.j0);
  const orders = usePlayground((s) => s.orders);
  const sweep = usePlayground((s) => s.sweep);
  const transcripts = usePlayground((s) => s.transcripts);
  const span = usePlayground((s) => s.span);
  const horizon = usePlayground((s) => s.horizon);
  const status = usePlayground((s) => s.status);
  const [form, setForm] = useState<CertForm | null>(null);
  const busy = status === 'busy' || status === 'running' || status === 'loading';

  const current = useMemo(() => partialStage(partial), [partial]);
  const ref = useMemo(() => (selected ? toStepRef(stages, current, selected) : lastStepRef(stages, current)), [stages, current, selected]);
  const step = useMemo(() => findStep(stages, current, ref), [stages, current, ref]);
  const stageInView = useMemo(() => stages.find((r) => r.stage === ref?.stage) ?? stages[stages.length - 1] ?? null, [stages, ref]);
  const violation = useMemo(() => violationPointsFromStages(stages, 'this run', current), [stages, current]);
  const batch = useMemo(() => {
    if (!ref) return transcripts[transcripts.length - 1] ?? null;
    return transcripts.find((b) => b.stage === ref.stage && b.before === step?.position) ?? transcripts[transcripts.length - 1] ?? null;
  }, [transcripts, ref, step]);
  const rows = useMemo(() => transcriptRows(batch, stages, { current }), [batch, stages, current]);
  if (!cfg) return null;
  const certForm = form ?? cfg.certForm;

  return (
    <>
      <section className="timeline-section" aria-label="Timeline">
        <Timeline nAgents={nAgents} records={stages} current={current} selected={selected} onSelect={select} />
      </section>
      <SwapCard records={stages} />
      <div className="charts-grid">
        <JChart records={stages} form={certForm} span={span} j0ci={j0?.ci} />
        <WaterfallChart record={stageInView} form={certForm} onFormChange={setForm} gamma={cfg.gamma} horizon={horizon} span={span} deltaConf={cfg.deltaConf} />
        <AdvantageChart step={step} aClip={cfg.aClip} />
        <KlChart step={step} alpha={cfg.alpha} />
        <BetaChart records={stages} current={current} nAgents={nAgents} />
        <ViolationChart points={violation} sweep={sweep} step={step} />
        <div className="chart-with-action">
          <OrderChart series={orders} form={certForm} />
          <div className="chart-actions">
            <button type="button" className="small" data-testid="compare-orders" disabled={busy} onClick={() => void compareOrders(session)} title={compareOrdersTitle(cfg, stages.length)}>
              Compare orders
            </button>
            <button type="button" className="small" data-testid="sweep-delta" disabled={busy} onClick={() => void sweepDeltas(session)} title={sweepDeltasTitle(cfg)}>
              Sweep δ
            </button>
          </div>
        </div>
      </div>
      {transcripts.length > 0 && <TranscriptTable rows={rows} caption={batch ? `Stage ${batch.stage}: episodes agent step ${batch.before + 1} of σ trained on` : undefined} onSelectStep={select} inspector={<TokenInspector step={ref} />} />}
    </>
  );
}
