/**
 * One row per finished stage: J, ΔJ, the certificate's lower bound, whether it held and whether it
 * certified an improvement (✓: bound above 0), the update order σ, and per agent the trust-region KL
 * quantile with its backtracks (↺n, only when the monitor undid a step). Every header has a tooltip saying how to read it; the line under the
 * table says what held and certified mean.
 *
 * Not here: the charts that answer the same questions in pictures (../charts), or any computation —
 * rows are made by stageRow.ts.
 */
import { memo, useMemo } from 'react';
import type { Config } from '../../sat/config';
import type { StageRecord } from '../../sat/stage';
import { count, fixed3, sci, short, signed3 } from '../format';
import { stageRow, type StageRow } from '../stageRow';
import { usePlayground } from '../store';
import { VerdictGlyph } from '../charts/VerdictMark';
import type { HeldState } from '../charts/series';
import { isLlmTask } from '../../sat/config';
import { certifiedLegend, undecidedOrUnchecked, VERDICTS } from '../../sat/verdicts';
import { AgentChip } from './AgentChip';
import '../charts/charts.css';

function HeldMark({ held }: { held: HeldState }) {
  return (
    <span className="held" title={VERDICTS[held].legend}>
      <VerdictGlyph verdict={held} />
      <span className="sr-only">{VERDICTS[held].words}</span>
    </span>
  );
}

function CertMark({ certified, legend }: { certified: boolean; legend: string }) {
  return certified ? (
    <span className="cert-mark" title={legend}>
      <span aria-hidden="true">{VERDICTS.certified.glyph}</span>
      <span className="sr-only">{VERDICTS.certified.words}</span>
    </span>
  ) : (
    <span className="cert-none" title="Not certified: the lower bound is not above 0, so it promises no improvement (it may still hold)">
      <span aria-hidden="true">·</span>
      <span className="sr-only">not certified</span>
    </span>
  );
}

const Row = memo(function Row({ row, joint, certLegend }: { row: StageRow; joint: boolean; certLegend: string }) {
  return (
    <tr data-testid="stage-row">
      <td className="num">{row.stage}</td>
      <td className="num strong" data-testid="cell-j" data-value={row.j}>
        {fixed3(row.j)}
      </td>
      <td className={`num ${row.dJ < 0 ? 'neg' : ''}`} data-value={row.dJ}>
        {signed3(row.dJ)}
      </td>
      <td className="num" data-value={row.certLower}>
        {fixed3(row.certLower)}
      </td>
      <td className="center marks">
        <HeldMark held={row.held} />
        <span data-testid="cell-cert" data-certified={row.certified ? 1 : 0}>
          <CertMark certified={row.certified} legend={certLegend} />
        </span>
      </td>
      <td className="order">
        {joint ? (
          <span title="scheme = simultaneous: every agent moved at once, from the same batch">all at once</span>
        ) : row.order.map((a, i) => (
          <span key={i} className="order-step">
            {i > 0 && <span className="arrow" aria-hidden="true">→</span>}
            <AgentChip agent={a} />
          </span>
        ))}
      </td>
      {row.klQ.map((k, j) => {
        const b = row.backtracks[j] ?? 0;
        return (
          <td key={`kl${j}`} className={`num ${j === 0 ? 'group-start' : ''}`} data-value={k} data-backtracks={b}>
            {sci(k)}
            {b > 0 ? (
              <span className="backtracks" title={`${count(b)} backtrack${b === 1 ? '' : 's'}: the monitor undid a step that moved too far and retried with β × 1.5`}>
                {' '}↺{count(b)}
              </span>
            ) : null}
          </td>
        );
      })}
    </tr>
  );
});

/** The lower-bound column's tooltip, in the words of the form the run's cert/lower uses. */
function lowerTitle(form: Config['certForm']): string {
  return form === 'gamma'
    ? "Lower bound on ΔJ in the paper's γ form (certForm = gamma, a control): fresh gain − policy-shift penalty − estimator bias − Hoeffding width, all scaled by 1/(1−γ) (docs/certificate.md §9). At γ = 0.99 it is vacuous: far below anything J could lose."
    : 'Certified lower bound on ΔJ: a one-sided lower confidence bound on the agents\' summed fresh gains, each measured on a certification batch its update never saw — fresh gain minus the confidence width; no shift or bias term, both 0 by construction (docs/certificate.md §4–§6). Negative means it only promises J will not fall further than that.';
}

/**
 * One row object per record (and team size), kept while the record lives: a new stage then makes
 * one new row, and the memoised rows of the stages before it are not drawn again.
 */
const rowCache = new WeakMap<StageRecord, { n: number; row: StageRow }>();
function cachedRow(r: StageRecord, n: number): StageRow {
  const hit = rowCache.get(r);
  if (hit && hit.n === n) return hit.row;
  const row = stageRow(r, n);
  rowCache.set(r, { n, row });
  return row;
}

/** What a table belongs to. */
interface RunInfo {
  readonly preset: string;
  readonly seed: number;
  readonly nAgents: number;
  readonly j0: number;
  readonly delta: number;
  readonly alpha: number;
  readonly certForm: Config['certForm'];
}

function Caption({ info, rows }: { info: RunInfo; rows: readonly StageRow[] }) {
  const held = rows.filter((r) => r.held === 'held').length;
  const checked = rows.filter((r) => r.held === 'held' || r.held === 'not held').length;
  const undecided = rows.filter((r) => r.held === 'undecided').length;
  const certified = rows.filter((r) => r.certified).length;
  return (
    <div className="table-caption" data-testid="run-caption">
      <span>
        <strong>{info.preset}</strong> · seed {info.seed} · {info.nAgents} agents
      </span>
      <span>
        initial J <span className="num">{fixed3(info.j0)}</span>
      </span>
      {rows.length > 0 && (
        <span>
          certificate held in {held} of {checked} checked stages{checked < rows.length ? ` (${undecidedOrUnchecked(undecided, rows.length - checked - undecided)})` : ''}, certified an improvement in {certified} of {rows.length}
        </span>
      )}
    </div>
  );
}

export function StageTable() {
  const stages = usePlayground((s) => s.stages);
  const cfg: Config | null = usePlayground((s) => s.config);
  const preset = usePlayground((s) => s.preset);
  const j0 = usePlayground((s) => s.j0);
  const nAgents = usePlayground((s) => s.agents.length);
  const rows = useMemo(() => stages.map((r) => cachedRow(r, nAgents)), [stages, nAgents]);

  if (!cfg || !j0 || rows.length === 0) {
    return (
      <div className="empty" data-testid="empty">
        <p>No stages yet.</p>
        <p className="muted">
          Press <strong>Step stage ▸▸</strong> or <strong>Run ▶</strong>: each stage updates every agent once, in the order σ, and adds one row here.
        </p>
      </div>
    );
  }
  const info: RunInfo = { preset, seed: cfg.seed, nAgents, j0: j0.J, delta: cfg.delta, alpha: cfg.alpha, certForm: cfg.certForm };
  const certLegend = certifiedLegend(cfg.deltaConf, !isLlmTask(cfg.task));
  const n = info.nAgents;
  const agents = Array.from({ length: n }, (_, j) => j);
  return (
    <section className="table-section" aria-label="Stages">
      <h2>Every stage in numbers</h2>
      <Caption info={info} rows={rows} />
      <div className="table-wrap">
        <table className="stages" data-testid="stage-table">
          <thead>
            <tr>
              <th rowSpan={2} className="num" title="Stage k updates every agent once, in the order σ.">
                Stage
              </th>
              <th rowSpan={2} className="num" title="Team return J after the stage, computed exactly by enumerating the game. Higher is better.">
                J
              </th>
              <th rowSpan={2} className="num" title="Realised change of J during this stage.">
                ΔJ
              </th>
              <th rowSpan={2} className="num wrap" title={lowerTitle(info.certForm)}>
                Certified ΔJ ≥
              </th>
              <th rowSpan={2} className="center wrap" title={`Held — filled dot: ΔJ was at least the certified bound; hollow red circle: it was not; dashed grey ring: undecided; small grey dot: not checked. Cert — ${certLegend}, a promise of progress, not only of a bounded fall (docs/certificate.md §12); a dot: the bound is 0 or below.`}>
                Held, cert
              </th>
              <th rowSpan={2} title="Update order σ: who was trained first, second, …; each agent is trained on advantages that account for its predecessors' updates.">
                Order σ
              </th>
              <th colSpan={n} className="group-start center" title={`(1−α)-quantile, α = ${info.alpha}, of the per-state KL between each agent's new and old policy. The trust region keeps it at most δ. ↺n: the trust-region monitor undid a step that moved too far n times and retried with a stronger KL penalty (β × 1.5).`}>
                KL quantile <span className="muted">(δ = {short(info.delta)})</span>
              </th>
            </tr>
            <tr className="agents-row">
              {agents.map((j) => (
                <th key={`kl${j}`} className={`num ${j === 0 ? 'group-start' : ''}`}>
                  <AgentChip agent={j} />
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <Row joint={cfg.scheme === 'simultaneous'} key={r.stage} row={r} certLegend={certLegend} />
            ))}
          </tbody>
        </table>
      </div>
      <p className="how-to-read">
        {(['held', 'not held', 'undecided', 'unchecked'] as const).filter((v) => v === 'held' || v === 'not held' || rows.some((r) => r.held === v)).map((v) => (
          <span key={v} className="legend-item" data-verdict-key={v}>
            <VerdictGlyph verdict={v} /> {VERDICTS[v].legend}.
          </span>
        ))}
        <span className="legend-item" data-verdict-key="certified">
          {certLegend}.
        </span>
        <span className="legend-item">↺n after a KL quantile: that agent&apos;s step backtracked n times.</span>
        <span className="muted">A negative bound promises only that J falls by no more than that. Hover a column title for how to read it.</span>
      </p>
    </section>
  );
}
