/**
 * The Claims view: the five claims of docs/method.md §10b as docs/claims.md reports them — per
 * claim its statement, the verdict in words (holds / does not hold / not established, at the
 * scale it ran at) with the mark it shares with the certificate's verdicts (src/sat/verdicts.ts:
 * held, not held, undecided) and their key, what ran, the rule, the tests with their 95 % intervals, the plot (mean ± 95 %
 * CI over seeds, from the committed data src/app/claims/data.json, which `npm run claims` writes)
 * and the exact commands.
 *
 * The tabular claims (2, 3, 5) can be re-run live in this tab, at the quick scale (seconds) or the
 * full one (minutes; the card says how long the CLI took), with progress and Cancel: the same src/studies/claims.ts the CLI
 * runs, so the same seeds give the same numbers. A live result is labelled as such and can be put
 * away again; a cancelled run changes nothing.
 *
 * Not here: what a claim runs or how its verdict is decided (src/studies/claims.ts), the report's
 * files (src/cli/claims.ts), the language claims' live runs (minutes per stage on a CPU: the CLI's
 * job).
 */
import { useRef, useState } from 'react';
import committedData from '../claims/data.json';
import { type ClaimPlot, type ClaimResult, type ClaimScale, type ClaimsReport, runClaim, sampleSize } from '../../studies/claims';
import { useMeasuredWidth } from '../charts/ChartFrame';
import { ClaimPlotChart } from './ClaimPlotChart';
import { ClaimVerdictChip, ClaimVerdictLegend } from '../charts/VerdictMark';
import { yieldToBrowser } from '../session';
import './ClaimsView.css';

const COMMITTED = committedData as unknown as ClaimsReport;

const f3 = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : String(x));

interface Job {
  readonly id: number;
  readonly scale: ClaimScale;
  readonly done: number;
  readonly total: number;
  readonly what: string;
}

/** A claim's plot at the card's measured width (ClaimPlotChart.tsx draws it). */
function ClaimChart({ plot, testid }: { plot: ClaimPlot; testid: string }) {
  const [ref, width] = useMeasuredWidth<HTMLDivElement>(560);
  const points = plot.series.reduce((a, s) => a + s.points.length, 0);
  return (
    <div className="claim-chart" ref={ref} data-testid={testid} data-points={points} data-series={plot.series.length}>
      <ClaimPlotChart plot={plot} width={Math.min(width, 640)} height={280} />
    </div>
  );
}

interface CardProps {
  readonly claim: ClaimResult;
  readonly live: boolean;
  readonly seconds?: number;
  readonly job: Job | null;
  readonly onRerun: (scale: ClaimScale) => void;
  readonly onCancel: () => void;
  readonly onShowCommitted: () => void;
}

function ClaimCard({ claim: c, live, seconds, job, onRerun, onCancel, onShowCommitted }: CardProps) {
  const mine = job?.id === c.id;
  return (
    <article className="claim-card" data-testid={`claim-${c.id}`} data-live={live ? c.scale : 'committed'}>
      <header className="claim-head">
        <h3>
          {c.id}. {c.title}
        </h3>
        <ClaimVerdictChip verdict={c.verdict} testid={`claim-${c.id}-verdict`} />
      </header>
      <blockquote className="claim-statement">{c.statement}</blockquote>
      <p className="claim-source">
        {live ? (
          <strong>
            Live re-run in this tab at the {c.scale} scale (not the committed data).{' '}
            <button type="button" className="small" onClick={onShowCommitted}>
              Show the committed result
            </button>
          </strong>
        ) : (
          <>Committed result ({c.scale} scale{seconds !== undefined ? `, ${seconds.toFixed(0)} s in the CLI` : ''}), as in docs/claims.md.</>
        )}
      </p>
      <p>
        <span className="claim-label">What ran:</span> {c.setup}.
      </p>
      <p>
        <span className="claim-label">Rule:</span> {c.rule}
      </p>
      <table className="claim-tests">
        <thead>
          <tr>
            <th>test</th>
            <th>mean [95 % CI]</th>
            <th>n</th>
            <th>verdict</th>
          </tr>
        </thead>
        <tbody>
          {c.tests.map((t) => (
            <tr key={t.label}>
              <td>{t.label}</td>
              <td className="num">
                {f3(t.estimate.mean)} [{f3(t.estimate.lo)}, {f3(t.estimate.hi)}]
              </td>
              <td className="num">{sampleSize(t.estimate)}</td>
              <td>
                <ClaimVerdictChip verdict={t.verdict} className="claim-test-verdict" />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="claim-summary">{c.summary}</p>
      <h4 className="claim-plot-title">{c.plot.title}</h4>
      <ClaimChart plot={c.plot} testid={`claim-${c.id}-chart`} />
      <pre className="claim-commands" data-testid={`claim-${c.id}-commands`}>{c.commands.join('\n')}</pre>
      {c.kind === 'tabular' ? (
        <div className="claim-rerun">
          {mine ? (
            <>
              <progress max={job.total} value={job.done} data-testid="claims-progress" />
              <span className="muted">{job.what}</span>
              <button type="button" className="small" data-testid="claims-cancel" onClick={onCancel}>
                Cancel
              </button>
            </>
          ) : (
            <>
              <span>Re-run live:</span>
              <button type="button" className="small" data-testid={`claim-${c.id}-rerun-quick`} disabled={job !== null} onClick={() => onRerun('quick')}>
                quick (seconds)
              </button>
              <button type="button" className="small" data-testid={`claim-${c.id}-rerun-full`} disabled={job !== null} onClick={() => onRerun('full')}>
                full{seconds !== undefined ? ` (${seconds.toFixed(0)} s in the CLI)` : ''}
              </button>
            </>
          )}
        </div>
      ) : (
        <p className="muted claim-rerun">A language claim: minutes per stage on a CPU, so it is re-run from the command line above, not here.</p>
      )}
    </article>
  );
}

export function ClaimsView({ onClose }: { onClose: () => void }) {
  const [live, setLive] = useState<Readonly<Record<number, ClaimResult>>>({});
  const [job, setJob] = useState<Job | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const cancelled = useRef(false);

  async function rerun(id: number, scale: ClaimScale) {
    cancelled.current = false;
    setNote(null);
    setJob({ id, scale, done: 0, total: 1, what: 'starting…' });
    try {
      const r = await runClaim(id, scale, {
        cancelled: () => cancelled.current,
        onProgress: async (done, total, what) => {
          setJob({ id, scale, done, total, what });
          await yieldToBrowser();
        },
      });
      if (r) setLive((m) => ({ ...m, [id]: r }));
      else setNote(`Claim ${id}: the re-run was cancelled; the result shown is unchanged.`);
    } catch (e) {
      setNote(`Claim ${id}: the re-run failed (${e instanceof Error ? e.message : String(e)}); the result shown is unchanged.`);
    } finally {
      setJob(null);
    }
  }

  return (
    <section className="claims" data-testid="claims-view" aria-label="The claims, measured">
      <header className="claims-head">
        <div>
          <h2>The claims, measured</h2>
          <p className="muted">
            The five claims of docs/method.md §10b, each over several seeds at toy scale — a verdict is a verdict at the scale it ran at. Every interval is 95 %: Student t over seeds (paired where
            two variants share a seed), Wilson&rsquo;s score interval for claim 3&rsquo;s shares near 1 (stages pooled over seeds), a bootstrap for claim 5&rsquo;s exponent. A test holds when its interval lies on the claimed side of the threshold, does not hold when it lies on the other
            side, and is not established when it contains it. Reproduce all of it with <code>npm run claims</code> (docs/claims.md).
          </p>
          <p className="claims-key" data-testid="claims-key">
            Each verdict carries the mark of its like on the playground&apos;s charts: <ClaimVerdictLegend />
          </p>
        </div>
        <button type="button" className="small" data-testid="claims-close" onClick={onClose}>
          ◂ Back to the playground
        </button>
      </header>
      {note && (
        <div className="notice" role="status" data-testid="claims-note">
          {note}
        </div>
      )}
      <table className="claims-summary" data-testid="claims-summary">
        <tbody>
          {COMMITTED.claims.map((c) => (
            <tr key={c.id}>
              <td>{c.id}</td>
              <td>{c.title}</td>
              <td>
                <ClaimVerdictChip verdict={(live[c.id] ?? c).verdict} />
                {live[c.id] && <span className="muted"> (live, {live[c.id]!.scale})</span>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {COMMITTED.claims.map((c) => (
        <ClaimCard
          key={c.id}
          claim={live[c.id] ?? c}
          live={live[c.id] !== undefined}
          seconds={COMMITTED.seconds?.[c.id]}
          job={job}
          onRerun={(scale) => void rerun(c.id, scale)}
          onCancel={() => {
            cancelled.current = true;
          }}
          onShowCommitted={() =>
            setLive((m) => {
              const next = { ...m };
              delete next[c.id];
              return next;
            })
          }
        />
      ))}
    </section>
  );
}
