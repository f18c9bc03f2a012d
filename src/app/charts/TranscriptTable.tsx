/**
 * "What did the agents say?" — for language tasks, every episode of the batch an agent step
 * trained on, a page at a time: the prompt (and reference answer), each agent's message in its
 * colour with the agent step whose update produced the policy that wrote it, the verifier's
 * verdict and the reward, so a reader can see which update wrote what. Filters by reward, by the
 * episode's advantage (its reward against its group's mean) and by agent; each episode links to
 * the token inspector of the step in view (components/TokenInspector.tsx, drawn under the table).
 *
 * The same view shows a real run's episodes from an imported generation dump (verl's or TeamTR's
 * `<step>.jsonl`, src/bridge/generations.ts): per step, each reply's prompt, the reply credited to
 * the agent whose turn marker ends its prompt, and the run's reward; paged and filtered the same way.
 *
 * Not here: recording episodes (the session keeps experiment.ts `latestEpisodes` after each step,
 * see series.ts `TranscriptBatch`), working out producers (series.ts `transcriptRows`), reading
 * dumps (src/bridge/generations.ts).
 */
import { type CSSProperties, memo, useMemo, useState } from 'react';
import { generationSummary, type GenerationDump } from '../../bridge/generations';
import { fixed3 } from '../format';
import { agentColor, agentTint } from '../theme';
import { AgentChip } from '../components/AgentChip';
import { TokenInspector, type EpisodeTarget } from '../components/TokenInspector';
import { ChartFrame } from './ChartFrame';
import type { StepRef, TranscriptRow } from './series';

/** Episodes per page. */
export const TRANSCRIPT_PAGE = 12;

export interface TranscriptTableProps {
  /** Every episode of the batch in view, in the batch's order (a row's index is its episode index). */
  readonly rows: readonly TranscriptRow[];
  /** Where the rollout came from, e.g. "Stage 4: the batch agent step 2 of σ trained on". */
  readonly caption?: string;
  /** Episodes per group of the batch (the advantage filter compares a reward with its group's mean). */
  readonly groupSize?: number;
  /** Selecting a producer (click on "by stage 3 update"): the step that wrote the policy. */
  readonly onSelectStep?: (ref: StepRef) => void;
  /** The agent step in view, for the token inspector under the table (null: none). */
  readonly step?: Required<StepRef> | null;
  /** The rows are the batch `step` trained on, so each links to its episode in the inspector. */
  readonly linked?: boolean;
  /** An imported generation dump, shown in this view (a choice beside the run's own episodes). */
  readonly imported?: GenerationDump | null;
  readonly onCloseImported?: () => void;
}

/** One row as the table draws it: the run's own episodes and an imported dump's replies alike. */
interface ShownRow {
  readonly key: string;
  /** The episode's index in its batch (own run), or its row in the dump. */
  readonly e: number;
  readonly prompt: string;
  /** The reference answer (own run) or the dump's ground truth; null when none. */
  readonly reference: string | null;
  readonly messages: TranscriptRow['messages'];
  readonly reward: number | null;
  /** The verifier's verdict; null for an imported reply (a dump holds the reward only). */
  readonly correct: boolean | null;
  readonly reason?: string;
  /** Reward minus its group's mean (own run, when the group size is known), else null. */
  readonly advantage: number | null;
  /** The agents that wrote in the episode. */
  readonly agents: readonly number[];
  /** Imported: the dump's step. */
  readonly step?: number;
}

interface Filter {
  readonly reward: string;
  readonly adv: 'all' | 'positive' | 'negative' | 'zero';
  readonly agent: string;
  readonly text: string;
  /** Imported: the dump's step ('' = the first). */
  readonly step: string;
}

const NO_FILTER: Filter = { reward: 'all', adv: 'all', agent: 'all', text: '', step: '' };

function shown(text: string): string {
  return text.length === 0 ? '∅ (empty)' : text;
}

/** A long prompt's end, where the turn and the earlier messages are. */
const tail = (s: string, n = 240) => (s.length > n ? `…${s.slice(-n)}` : s);

/** The run's own rows with their episode index, agents and advantage against the group mean. */
function ownRows(rows: readonly TranscriptRow[], groupSize?: number): ShownRow[] {
  const G = groupSize && groupSize > 0 && rows.length % groupSize === 0 ? groupSize : 0;
  const mean = (g: number) => {
    let s = 0;
    for (let k = g * G; k < (g + 1) * G; k++) s += rows[k]!.reward;
    return s / G;
  };
  return rows.map((r, e) => ({
    key: r.key,
    e,
    prompt: r.prompt,
    reference: r.reference,
    messages: r.messages,
    reward: r.reward,
    correct: r.correct,
    ...(r.reason ? { reason: r.reason } : {}),
    advantage: G ? r.reward - mean(Math.floor(e / G)) : null,
    agents: [...new Set(r.messages.map((m) => m.agent))],
  }));
}

/** An imported dump's replies as rows: one message each, credited to the agent its prompt names. */
function importedRows(dump: GenerationDump): ShownRow[] {
  return dump.rows.map((r, e) => ({
    key: `dump.${e}`,
    e,
    prompt: tail(r.input),
    reference: r.groundTruth,
    messages: [{ turn: 0, agent: r.agent ?? 0, text: r.output, producer: null }],
    reward: r.score,
    correct: null,
    advantage: null,
    agents: r.agent === null ? [] : [r.agent],
    step: r.step,
  }));
}

function keeps(r: ShownRow, f: Filter): boolean {
  if (f.step !== '' && r.step !== undefined && String(r.step) !== f.step) return false;
  if (f.reward !== 'all' && String(r.reward) !== f.reward) return false;
  if (f.adv !== 'all') {
    const a = r.advantage;
    if (a === null || (f.adv === 'positive' && !(a > 1e-12)) || (f.adv === 'negative' && !(a < -1e-12)) || (f.adv === 'zero' && Math.abs(a) > 1e-12)) return false;
  }
  if (f.agent !== 'all' && !r.agents.includes(Number(f.agent))) return false;
  if (f.text !== '') {
    const needle = f.text.toLowerCase();
    if (!r.prompt.toLowerCase().includes(needle) && !r.messages.some((m) => m.text.toLowerCase().includes(needle))) return false;
  }
  return true;
}

export const TranscriptTable = memo(function TranscriptTable({ rows, caption, groupSize, onSelectStep, step, linked, imported, onCloseImported }: TranscriptTableProps) {
  const [source, setSource] = useState<'run' | 'imported'>('imported');
  const fromDump = !!imported && (source === 'imported' || rows.length === 0);
  const [filter, setFilter] = useState<Filter>(NO_FILTER);
  const [page, setPage] = useState(0);
  /** The episode a row's link asked the inspector for, with the step it belongs to (another step in view drops it). */
  const [target, setTarget] = useState<(EpisodeTarget & { step: string }) | null>(null);
  const stepKey = step ? `${step.stage}.${step.agent}` : '';
  const all = useMemo(() => (fromDump ? importedRows(imported!) : ownRows(rows, groupSize)), [fromDump, imported, rows, groupSize]);
  // An imported dump opens on its first step; the run's own rows are one batch already.
  const f: Filter = fromDump && filter.step === '' && imported!.steps.length > 0 ? { ...filter, step: String(imported!.steps[0]) } : filter;
  const inScope = useMemo(() => (fromDump ? all.filter((r) => String(r.step) === f.step) : all), [all, fromDump, f.step]);
  const kept = useMemo(() => inScope.filter((r) => keeps(r, f)), [inScope, f]);
  const pages = Math.max(1, Math.ceil(kept.length / TRANSCRIPT_PAGE));
  const at = Math.min(page, pages - 1);
  const visible = kept.slice(at * TRANSCRIPT_PAGE, (at + 1) * TRANSCRIPT_PAGE);
  const rewards = useMemo(() => [...new Set(inScope.map((r) => r.reward).filter((x): x is number => x !== null))].sort((x, y) => x - y), [inScope]);
  const agents = useMemo(() => [...new Set(inScope.flatMap((r) => r.agents))].sort((x, y) => x - y), [inScope]);
  const hasAdvantage = inScope.some((r) => r.advantage !== null);
  const maxMsgs = Math.max(0, ...visible.map((r) => r.messages.length));
  const cols = Array.from({ length: maxMsgs }, (_, i) => i);
  const correct = kept.filter((r) => r.correct === true).length;
  const choose = (next: Partial<Filter>) => {
    setFilter({ ...f, ...next });
    setPage(0);
  };
  const switchTo = (s: 'run' | 'imported') => {
    setSource(s);
    setFilter(NO_FILTER);
    setPage(0);
  };
  const summary = useMemo(() => (imported ? generationSummary(imported) : []), [imported]);
  const scoped = inScope.length;
  return (
    <ChartFrame
      testid="transcripts"
      title="What did the agents say?"
      points={fromDump ? imported!.rows.length : rows.length}
      className="chart-wide"
      empty={<>Step an agent on a language task to see the episodes it was trained on, or Import a real run&apos;s generation dump.</>}
      readout={
        <>
          {imported && rows.length > 0 && (
            <span className="transcript-source" role="group" aria-label="Whose episodes">
              <button type="button" className={`small${fromDump ? '' : ' on'}`} aria-pressed={!fromDump} data-testid="transcripts-source-run" onClick={() => switchTo('run')}>
                this run
              </button>
              <button type="button" className={`small${fromDump ? ' on' : ''}`} aria-pressed={fromDump} data-testid="transcripts-source-imported" onClick={() => switchTo('imported')}>
                imported
              </button>
            </span>
          )}
          {fromDump ? (
            <span data-testid="transcripts-batch">
              Imported {imported!.name}: step {f.step}, {scoped} repl{scoped === 1 ? 'y' : 'ies'} ({imported!.rows.length} in {imported!.steps.length} step{imported!.steps.length === 1 ? '' : 's'};{' '}
              {imported!.agents > 0 ? 'each credited to the agent whose turn marker ends its prompt' : 'one policy'})
            </span>
          ) : (
            <>
              {caption && <span>{caption}</span>}
              <span data-testid="transcripts-batch">
                the step trained on {rows.length} episode{rows.length === 1 ? '' : 's'}; {correct} of {kept.length} shown correct
              </span>
            </>
          )}
        </>
      }
      howTo={
        <>
          One row per episode: the prompt, then each message in turn order in its agent&apos;s colour, then the verifier&apos;s
          verdict and reward (docs/method.md §2.1: the reward comes from a verifier at the end). Under each message, the agent step whose
          update produced the policy that wrote it (&ldquo;initial&rdquo; = not yet trained); click it to select that step. &ldquo;Tokens&rdquo; opens the
          episode in the token inspector below. The advantage filter compares an episode&apos;s reward with its group&apos;s mean (R − μ, the sign of
          its Ã). An imported dump&apos;s rows are a real run&apos;s replies (docs/real-run.md): the run&apos;s reward, no verdict.
          Healthy: verdicts turn from ✗ to ✓ as stages pass, and later agents in a chain repair earlier mistakes.
        </>
      }
    >
      {() => (
        <>
          {fromDump && imported!.warnings.length > 0 && (
            <ul className="runlog-warnings muted" data-testid="transcripts-warnings">
              {imported!.warnings.map((w) => (
                <li key={w}>{w}</li>
              ))}
            </ul>
          )}
          {fromDump && (
            <p className="muted transcript-summary" data-testid="transcripts-summary">
              Mean reward per step{imported!.agents > 0 ? ' and agent' : ''}: {summary.map((s) => `step ${s.step}${s.agent === null ? '' : ` agent ${s.agent}`} ${s.meanScore === null ? '—' : fixed3(s.meanScore)} (${s.rows})`).join('; ')}
            </p>
          )}
          <div className="transcript-filters" data-testid="transcripts-filters">
            {fromDump && (
              <label>
                step{' '}
                <select data-testid="transcripts-step" value={f.step} onChange={(e) => choose({ step: e.target.value, reward: 'all', agent: 'all' })}>
                  {imported!.steps.map((s) => (
                    <option key={s} value={String(s)}>
                      {s}
                    </option>
                  ))}
                </select>
              </label>
            )}
            <label>
              reward{' '}
              <select data-testid="transcripts-reward" value={f.reward} onChange={(e) => choose({ reward: e.target.value })}>
                <option value="all">any</option>
                {rewards.map((r) => (
                  <option key={r} value={String(r)}>
                    {fixed3(r)}
                  </option>
                ))}
              </select>
            </label>
            {hasAdvantage && (
              <label>
                advantage{' '}
                <select data-testid="transcripts-adv" value={f.adv} onChange={(e) => choose({ adv: e.target.value as Filter['adv'] })}>
                  <option value="all">any</option>
                  <option value="positive">above its group&apos;s mean</option>
                  <option value="negative">below it</option>
                  <option value="zero">at it</option>
                </select>
              </label>
            )}
            {agents.length > 1 && (
              <label>
                agent{' '}
                <select data-testid="transcripts-agent" value={f.agent} onChange={(e) => choose({ agent: e.target.value })}>
                  <option value="all">any</option>
                  {agents.map((a) => (
                    <option key={a} value={String(a)}>
                      {a}
                    </option>
                  ))}
                </select>
              </label>
            )}
            <label>
              text <input data-testid="transcripts-text" value={f.text} onChange={(e) => choose({ text: e.target.value })} placeholder="in the prompt or a message" />
            </label>
            <span className="muted" data-testid="transcripts-count">
              {kept.length} of {scoped} episode{scoped === 1 ? '' : 's'}, page {at + 1} of {pages}
            </span>
            <button type="button" className="small" data-testid="transcripts-prev" aria-label="Earlier page" disabled={at === 0} onClick={() => setPage(at - 1)}>
              ◂
            </button>
            <button type="button" className="small" data-testid="transcripts-next" aria-label="Later page" disabled={at >= pages - 1} onClick={() => setPage(at + 1)}>
              ▸
            </button>
            {fromDump && onCloseImported && (
              <button type="button" className="small" data-testid="transcripts-close-imported" onClick={onCloseImported}>
                Close the dump
              </button>
            )}
          </div>
          <div className="transcript-wrap">
            <table className="transcript">
              <thead>
                <tr>
                  <th className="num">#</th>
                  <th>Prompt</th>
                  {cols.map((i) => (
                    <th key={i}>{fromDump ? 'Reply' : `Message ${i + 1}`}</th>
                  ))}
                  <th>Verdict</th>
                  <th className="num">Reward</th>
                </tr>
              </thead>
              <tbody>
                {visible.map((r) => (
                  <tr key={r.key} data-testid="transcript-row" data-e={r.e} data-reward={r.reward ?? ''} data-advantage={r.advantage ?? ''} data-agents={r.agents.join(',')}>
                    <td className="num">
                      {r.e + 1}
                      {!fromDump && linked && step && (
                        <div>
                          <button type="button" className="linkish" data-testid="transcript-inspect" title={`Open episode ${r.e + 1} in the token inspector of agent ${step.agent}'s stage-${step.stage} update`} onClick={() => setTarget({ e: r.e, n: (target?.n ?? 0) + 1, step: stepKey })}>
                            tokens
                          </button>
                        </div>
                      )}
                    </td>
                    <td className="prompt">
                      <code title={fromDump ? imported!.rows[r.e]!.input : undefined}>{r.prompt}</code>
                      {r.reference !== null && (
                        <div className="muted ref">
                          {fromDump ? 'truth' : 'answer'} <code>{r.reference}</code>
                        </div>
                      )}
                    </td>
                    {cols.map((i) => {
                      const m = r.messages[i];
                      if (!m) return <td key={i} />;
                      const credited = !fromDump || r.agents.length > 0;
                      return (
                        <td key={i} className="msg" style={credited ? ({ '--agent': agentColor(m.agent), '--agent-tint': agentTint(m.agent, 0.1) } as CSSProperties) : undefined}>
                          <div className="msg-head">{credited ? <AgentChip agent={m.agent} label={`agent ${m.agent}`} /> : <span className="muted">the policy</span>}</div>
                          <code className="msg-text">{shown(m.text)}</code>
                          {!fromDump && (
                            <div className="msg-by">
                              {m.producer ? (
                                onSelectStep ? (
                                  <button type="button" className="linkish" onClick={() => onSelectStep(m.producer!)} title="Select the agent step that produced this policy">
                                    by stage {m.producer.stage} update
                                  </button>
                                ) : (
                                  <>by stage {m.producer.stage} update</>
                                )
                              ) : (
                                'initial policy'
                              )}
                            </div>
                          )}
                        </td>
                      );
                    })}
                    {r.correct === null ? (
                      <td className="verdict muted" title="A generation dump holds the run's reward, not a verdict">
                        —
                      </td>
                    ) : (
                      <td className={r.correct ? 'verdict ok' : 'verdict wrong'} title={r.reason}>
                        {r.correct ? '✓ correct' : '✗ wrong'}
                        {r.reason && <div className="muted reason">{r.reason}</div>}
                      </td>
                    )}
                    <td className="num">{r.reward === null ? '—' : fixed3(r.reward)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {!fromDump && step !== undefined && <TokenInspector step={step} {...(linked ? { rewards: rows.map((r) => r.reward) } : {})} target={target && target.step === stepKey ? target : null} />}
        </>
      )}
    </ChartFrame>
  );
});
