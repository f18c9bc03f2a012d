/**
 * A real run's episodes in the playground: the replies of an imported generation dump
 * (src/bridge/generations.ts: verl's and TeamTR's trainer.rollout_data_dir /
 * validation_data_dir files) as a table — step, the agent that wrote each reply, its score and
 * the ground truth, the prompt it saw and the reply — paged and filterable by step, agent and text,
 * like the transcripts of the playground's own runs. Mounted by RunLogSlot (./runLogState) while
 * a dump is open.
 *
 * Not here: reading the dump (src/bridge/generations.ts), the metric charts (./RunLogView.tsx).
 */
import { useMemo, useState } from 'react';
import { generationPage, generationSummary, type GenerationDump } from '../../bridge/generations';
import { agentColor } from '../theme';
import { useGenerations } from './runLogState';

const PAGE = 20;
const fmt = (x: number | null) => (x === null ? '—' : x.toFixed(3));
/** A long prompt's end, where the turn and the earlier messages are. */
const tail = (s: string, n = 160) => (s.length > n ? `…${s.slice(-n)}` : s);

/** The open dump's episodes; mounted only while one is open. Each import starts unfiltered, on page 1. */
export function GenerationsView() {
  const dump = useGenerations((s) => s.dump)!;
  const opened = useGenerations((s) => s.opened);
  return <DumpTable key={opened} dump={dump} />;
}

function DumpTable({ dump }: { readonly dump: GenerationDump }) {
  const [step, setStep] = useState<number | undefined>(undefined);
  const [agent, setAgent] = useState<number | undefined>(undefined);
  const [text, setText] = useState('');
  const [page, setPage] = useState(0);
  const view = useMemo(() => generationPage(dump, { step, agent, text, page, size: PAGE }), [dump, step, agent, text, page]);
  const summary = useMemo(() => generationSummary(dump), [dump]);
  const choose = (f: () => void) => {
    f();
    setPage(0);
  };
  return (
    <section className="runlog" data-testid="generations" aria-label={`Imported episodes ${dump.name}`}>
      <header className="runlog-head">
        <h2>
          Imported episodes: {dump.name}{' '}
          <span className="muted">
            ({dump.rows.length} replies, {dump.steps.length} step{dump.steps.length > 1 ? 's' : ''}, {dump.agents > 0 ? `${dump.agents} agents, each reply credited to the agent whose turn marker ends its prompt` : 'one policy'})
          </span>
        </h2>
        <div className="runlog-actions">
          <button type="button" className="small" data-testid="generations-close" onClick={() => useGenerations.setState({ dump: null })}>Close</button>
        </div>
      </header>
      {dump.warnings.length > 0 && (
        <ul className="runlog-warnings muted" data-testid="generations-warnings">
          {dump.warnings.map((w) => <li key={w}>{w}</li>)}
        </ul>
      )}
      <p className="muted" data-testid="generations-summary">
        Mean score per step{dump.agents > 0 ? ' and agent' : ''}: {summary.map((s) => `step ${s.step}${s.agent === null ? '' : ` agent ${s.agent}`} ${fmt(s.meanScore)} (${s.rows})`).join('; ')}
      </p>
      <div className="generations-filters">
        <label>
          step{' '}
          <select data-testid="generations-step" value={step ?? ''} onChange={(e) => choose(() => setStep(e.target.value === '' ? undefined : Number(e.target.value)))}>
            <option value="">all</option>
            {dump.steps.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </label>{' '}
        {dump.agents > 0 && (
          <label>
            agent{' '}
            <select data-testid="generations-agent" value={agent ?? ''} onChange={(e) => choose(() => setAgent(e.target.value === '' ? undefined : Number(e.target.value)))}>
              <option value="">all</option>
              {Array.from({ length: dump.agents }, (_, i) => <option key={i} value={i}>{i}</option>)}
            </select>
          </label>
        )}{' '}
        <label>
          text <input data-testid="generations-text" value={text} onChange={(e) => choose(() => setText(e.target.value))} placeholder="in the prompt or reply" />
        </label>{' '}
        <span className="muted" data-testid="generations-count">{view.total} replies, page {Math.min(page, view.pages - 1) + 1} of {view.pages}</span>{' '}
        <button type="button" className="small" data-testid="generations-prev" disabled={page === 0} onClick={() => setPage((p) => Math.max(0, p - 1))}>◂</button>
        <button type="button" className="small" data-testid="generations-next" disabled={page >= view.pages - 1} onClick={() => setPage((p) => Math.min(view.pages - 1, p + 1))}>▸</button>
      </div>
      <table className="generations-table" data-testid="generations-rows">
        <thead>
          <tr><th>step</th><th>agent</th><th>score</th><th>truth</th><th>prompt (its end)</th><th>reply</th></tr>
        </thead>
        <tbody>
          {view.rows.map((r, i) => (
            <tr key={`${page}:${i}`}>
              <td>{r.step}</td>
              <td style={r.agent === null ? undefined : { color: agentColor(r.agent) }}>{r.agent ?? '—'}</td>
              <td>{fmt(r.score)}</td>
              <td>{r.groundTruth ?? '—'}</td>
              <td><code title={r.input}>{tail(r.input)}</code></td>
              <td><code>{r.output}</code></td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
