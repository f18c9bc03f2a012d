/**
 * The timeline: stages across, agents down, each cell numbered by the agent's position in
 * that stage's update order σ — "who was updated when, and where are we". Each finished stage's
 * header carries its held / not-held mark, and its title says whether the stage was certified
 * (lower bound above 0, docs/certificate.md §12). A cell shows the step's
 * outcome (accepted; accepted after backtracks ↺; rejected, struck through; not run yet, dashed),
 * the cursor (the last agent step run, ringed in ink) and the selection (filled in the agent's
 * colour). Clicking a cell selects that agent step; the grid is one tab stop, and the arrow keys
 * move the selection (←/→ previous/next step in update order, ↑/↓ the agent above/below in the same
 * stage, Home/End first/last step).
 *
 * Not here: which step is selected (the caller owns it; `onSelect` reports clicks and keys), the
 * grid's data and the navigation rule (charts/series.ts `timelineStages`, `moveSelection`).
 */
import { type CSSProperties, type KeyboardEvent, useEffect, useRef } from 'react';
import type { StageRecord } from '../../sat/stage';
import { HowTo } from '../charts/ChartFrame';
import { VerdictGlyph } from '../charts/VerdictMark';
import { checkPlusMinus, VERDICTS } from '../../sat/verdicts';
import { certifiedUnder, lastStepRef, moveSelection, timelineStages, toStepRef, type NavKey, type PartialStage, type StepRef, type TimelineCell, type TimelineStage } from '../charts/series';
import { fixed3, signed3 } from '../format';
import { agentColor, agentTint } from '../theme';
import { AgentChip } from './AgentChip';
import { sameStep } from '../stepRef';
import '../charts/charts.css';

export interface TimelineProps {
  readonly nAgents: number;
  /** Finished stages. */
  readonly records: readonly StageRecord[];
  /** The running stage (σ when known, steps so far). */
  readonly current?: PartialStage | null;
  /** The agent step in view (the store's `selected`); null = none selected. */
  readonly selected: StepRef | null;
  /** Called with the step a click or an arrow key selects (one that has run). */
  readonly onSelect: (ref: StepRef) => void;
  /** "Where we are": default the last agent step run. */
  readonly cursor?: Required<StepRef> | null;
  /** scheme = simultaneous: every agent of a stage moves at once, one joint step (cells marked "=" instead of a turn in σ). */
  readonly joint?: boolean;
}

const NAV_KEYS: readonly NavKey[] = ['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'Home', 'End'];

const STATUS_WORDS: Record<TimelineCell['status'], string> = {
  done: 'accepted',
  backtracked: 'accepted after backtracking',
  rejected: 'rejected: kept its old policy',
  pending: 'not run yet',
};

/** A stage header's title: "stage 4: certified improvement, certificate held". */
export function stageTitle(st: TimelineStage, certified: boolean | null): string {
  if (!st.finished) return `stage ${st.stage}: running`;
  const est = st.estimate ? ` (ΔJ estimated ${signed3(st.estimate.dJ)} ± ${fixed3(st.estimate.se)}, ${checkPlusMinus(st.estimate.pairs)})` : '';
  return `stage ${st.stage}: ${certified ? 'certified improvement (bound above 0), ' : ''}certificate ${st.held === null ? 'not closed' : VERDICTS[st.held].words}${est}`;
}

const keyOf = (r: Required<StepRef>) => `${r.stage}:${r.agent}`;

/** "stage 13: 1 of 3 agents updated (latest: agent 0)" — where the run stands, in words. */
function whereWords(stages: readonly TimelineStage[], here: Required<StepRef> | null): string {
  const last = stages[stages.length - 1];
  if (!last) return '';
  const done = last.cells.filter((c) => c.status !== 'pending').length;
  const latest = here ? ` (latest: agent ${here.agent})` : '';
  return last.finished ? `${stages.length} stage${stages.length > 1 ? 's' : ''} done${latest}` : `stage ${last.stage}: ${done} of ${last.cells.length} agents updated${latest}`;
}

export function Timeline({ nAgents, records, current, selected: selectedIn, onSelect: report, cursor, joint = false }: TimelineProps) {
  const stages = timelineStages(records, nAgents, current);
  const certified = new Map(records.map((r) => [r.stage, certifiedUnder(r, 'chosen')]));
  const selected = toStepRef(records, current, selectedIn);
  const onSelect = (ref: Required<StepRef>) => {
    const c = stages.find((st) => st.stage === ref.stage)?.cells[ref.agent];
    if (c && c.status !== 'pending') report(ref);
  };
  const here = cursor === undefined ? lastStepRef(records, current) : cursor;
  const cells = useRef(new Map<string, HTMLDivElement>());
  const grid = useRef<HTMLDivElement | null>(null);
  const ran = stages.reduce((s, st) => s + st.cells.filter((c) => c.status !== 'pending').length, 0);
  const tabStop = selected ?? here ?? (stages[0] ? { stage: stages[0].stage, agent: 0 } : null);

  // Keep keyboard focus on the selected cell when the selection moves while the grid has focus.
  useEffect(() => {
    if (!selected) return;
    const el = cells.current.get(keyOf(selected));
    if (!el) return;
    if (grid.current && typeof document !== 'undefined' && grid.current.contains(document.activeElement)) el.focus();
    el.scrollIntoView?.({ block: 'nearest', inline: 'nearest' });
  }, [selected?.stage, selected?.agent]);

  // The newest column in view: after a run the latest stage is at the right edge, not cut off.
  // Scrolled in the next animation frame, where the browser lays the page out anyway: reading
  // scrollWidth during the commit would force an extra layout of the whole page every stage.
  const scroller = useRef<HTMLDivElement | null>(null);
  useEffect(() => {
    if (selected) return;
    const id = requestAnimationFrame(() => {
      const el = scroller.current;
      if (el) el.scrollLeft = el.scrollWidth;
    });
    return () => cancelAnimationFrame(id);
  }, [stages.length, selected]);

  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    if (!(NAV_KEYS as readonly string[]).includes(e.key)) return;
    e.preventDefault();
    const next = moveSelection(stages, selected ?? here, e.key as NavKey);
    if (next && !sameStep(next, selected)) onSelect(next);
  };

  if (stages.length === 0) {
    return (
      <section className="timeline" data-testid="timeline" data-points={0} aria-label="Timeline">
        <div className="chart-empty">Step an agent to start the timeline: stages across, agents down, numbered in update order σ.</div>
      </section>
    );
  }

  return (
    <section className="timeline" data-testid="timeline" data-points={ran} aria-label="Timeline">
      <header className="chart-head">
        <h3 className="chart-title">Who was updated when, and where are we?</h3>
        <span className="chart-readout" data-testid="timeline-where">
          {whereWords(stages, here)}
        </span>
      </header>
      <div className="timeline-scroll" ref={scroller}>
        <div
          ref={grid}
          role="grid"
          aria-label="Agent steps: stages across, agents down; arrow keys move the selection"
          className="timeline-grid"
          style={{ gridTemplateColumns: `max-content repeat(${stages.length}, 30px)` }}
          onKeyDown={onKeyDown}
        >
          <div role="row" className="timeline-row timeline-head">
            <div role="columnheader" className="timeline-corner">
              stage
            </div>
            {stages.map((st) => (
              <div role="columnheader" key={st.stage} className={`timeline-stage ${st.finished ? '' : 'running'}`} title={stageTitle(st, certified.get(st.stage) ?? null)} data-certified={st.finished ? (certified.get(st.stage) ? 1 : 0) : undefined}>
                <span>{st.stage}</span>
                {st.held !== null ? <VerdictGlyph verdict={st.held} size={9} /> : <span className="timeline-running-dot" aria-hidden="true" />}
              </div>
            ))}
          </div>
          {Array.from({ length: nAgents }, (_, a) => (
            <div role="row" key={a} className="timeline-row">
              <div role="rowheader" className="timeline-agent">
                <AgentChip agent={a} label={`agent ${a}`} />
              </div>
              {stages.map((st) => {
                const c = st.cells[a]!;
                const ref = { stage: c.stage, agent: c.agent };
                const isSel = sameStep(ref, selected);
                const isHere = sameStep(ref, here);
                const pending = c.status === 'pending';
                const label = `stage ${c.stage}, agent ${c.agent}${c.position !== null ? `, position ${c.position} in σ` : ''}: ${STATUS_WORDS[c.status]}${c.backtracks > 0 ? ` (${c.backtracks} backtrack${c.backtracks > 1 ? 's' : ''})` : ''}${isHere ? ' — latest step' : ''}`;
                return (
                  <div
                    role="gridcell"
                    key={st.stage}
                    ref={(el) => {
                      if (el) cells.current.set(keyOf(ref), el);
                      else cells.current.delete(keyOf(ref));
                    }}
                    tabIndex={sameStep(ref, tabStop) ? 0 : -1}
                    aria-selected={isSel}
                    aria-disabled={pending || undefined}
                    aria-label={label}
                    title={label}
                    data-testid="timeline-cell"
                    data-stage={c.stage}
                    data-agent={c.agent}
                    data-position={c.position ?? ''}
                    data-status={c.status}
                    data-cursor={isHere || undefined}
                    className={`timeline-cell ${c.status} ${isSel ? 'selected' : ''} ${isHere ? 'cursor' : ''}`}
                    style={{ '--agent': agentColor(a), '--agent-tint': agentTint(a, 0.18) } as CSSProperties}
                    onClick={() => {
                      if (!pending) onSelect(ref);
                    }}
                  >
                    {c.position === null ? '' : joint ? '=' : c.position}
                    {c.status === 'backtracked' && <span className="timeline-bt" aria-hidden="true">↺</span>}
                  </div>
                );
              })}
            </div>
          ))}
        </div>
      </div>
      <HowTo
        text={
          <>
        {joint ? (
          <>each column is a stage, each row an agent; scheme = simultaneous moves every agent of a stage at once from the same batch, one joint step (= in every cell), the baseline SAT improves on (docs/method.md §3);</>
        ) : (
          <>each column is a stage, each row an agent; the number is the agent&apos;s turn in that stage&apos;s update order σ (docs/method.md §3);</>
        )}{' '}
        hover a stage number for its certificate. <span className="legend-cell done">1</span> accepted{' '}
        <span className="legend-cell backtracked">1<span className="timeline-bt">↺</span></span> accepted after backtracking{' '}
        <span className="legend-cell rejected">1</span> rejected <span className="legend-cell pending">1</span> not run yet{' '}
        <span className="legend-cell done cursor">1</span> latest step. Click a cell, or use the arrow keys, to show that step in the charts.
          </>
        }
      />
    </section>
  );
}
