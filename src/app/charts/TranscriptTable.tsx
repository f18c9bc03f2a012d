/**
 * "What did the agents say?" — for language tasks, a table of episodes from one rollout: the prompt
 * (and reference answer), each agent's message in its colour with the agent step whose update
 * produced the policy that wrote it, the verifier's verdict and the reward, so a reader can see
 * which update wrote what. Under it, the page's token inspector for the step in view (the
 * `inspector` slot: components/TokenInspector.tsx).
 *
 * Not here: recording episodes (the session snapshots experiment.ts `latestEpisodes` after each step,
 * see series.ts `TranscriptBatch`) or working out producers (series.ts `transcriptRows`).
 */
import { type CSSProperties, memo, type ReactNode } from 'react';
import { fixed3 } from '../format';
import { agentColor, agentTint } from '../theme';
import { AgentChip } from '../components/AgentChip';
import { ChartFrame } from './ChartFrame';
import type { StepRef, TranscriptRow } from './series';

export interface TranscriptTableProps {
  readonly rows: readonly TranscriptRow[];
  /** Where the rollout came from, e.g. "stage 4, before step 2 (under π̂¹)". */
  readonly caption?: string;
  /** Selecting a producer (click on "by stage 3 update"): the step that wrote the policy. */
  readonly onSelectStep?: (ref: StepRef) => void;
  /** Shown under the table: the token inspector of the step in view (docs/method.md §9b.1). */
  readonly inspector?: ReactNode;
}

function shown(text: string): string {
  return text.length === 0 ? '∅ (empty)' : text;
}

export const TranscriptTable = memo(function TranscriptTable({ rows, caption, onSelectStep, inspector }: TranscriptTableProps) {
  const maxMsgs = Math.max(0, ...rows.map((r) => r.messages.length));
  const cols = Array.from({ length: maxMsgs }, (_, i) => i);
  const correct = rows.filter((r) => r.correct).length;
  return (
    <ChartFrame
      testid="transcripts"
      title="What did the agents say?"
      points={rows.length}
      className="chart-wide"
      empty={<>Step an agent on a language task to see the episodes it was trained on.</>}
      readout={
        <>
          {caption && <span>{caption}</span>}
          <span>
            {correct} of {rows.length} correct
          </span>
        </>
      }
      howTo={
        <>
          One row per episode: the prompt, then each message in turn order in its agent&apos;s colour, then the verifier&apos;s
          verdict and reward (docs/method.md §2.1: the reward comes from a verifier at the end). Under each message, the agent step whose
          update produced the policy that wrote it (&ldquo;initial&rdquo; = not yet trained); click it to select that step.
          Healthy: verdicts turn from ✗ to ✓ as stages pass, and later agents in a chain repair earlier mistakes.
        </>
      }
    >
      {() => (
        <>
          <div className="transcript-wrap">
            <table className="transcript">
              <thead>
                <tr>
                  <th>Prompt</th>
                  {cols.map((i) => (
                    <th key={i}>Message {i + 1}</th>
                  ))}
                  <th>Verdict</th>
                  <th className="num">Reward</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => (
                  <tr key={r.key} data-testid="transcript-row">
                    <td className="prompt">
                      <code>{r.prompt}</code>
                      <div className="muted ref">
                        answer <code>{r.reference}</code>
                      </div>
                    </td>
                    {cols.map((i) => {
                      const m = r.messages[i];
                      if (!m) return <td key={i} />;
                      return (
                        <td key={i} className="msg" style={{ '--agent': agentColor(m.agent), '--agent-tint': agentTint(m.agent, 0.1) } as CSSProperties}>
                          <div className="msg-head">
                            <AgentChip agent={m.agent} label={`agent ${m.agent}`} />
                          </div>
                          <code className="msg-text">{shown(m.text)}</code>
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
                        </td>
                      );
                    })}
                    <td className={r.correct ? 'verdict ok' : 'verdict wrong'} title={r.reason}>
                      {r.correct ? '✓ correct' : '✗ wrong'}
                      {r.reason && <div className="muted reason">{r.reason}</div>}
                    </td>
                    <td className="num">{fixed3(r.reward)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {inspector}
        </>
      )}
    </ChartFrame>
  );
});
