/**
 * The picture of the thing being learned, first on the page (TensorFlow Playground's decision
 * boundary): for a table game, the payoff table (one-shot matrix games of two or three agents) with
 * the joint action the team now plays most outlined and every cell shaded by how often the team
 * plays it, the most likely episode in words, and each agent's action probabilities as bars in its
 * colour — all for the step in view, so they move as you step (gameFrame.ts computes them exactly).
 * For a language team, one episode of the step in view: prompt, each message in its agent's
 * colour, and the verdict.
 *
 * Not here: the numbers (gameFrame.ts), the full transcripts (charts/TranscriptTable.tsx).
 */
import type { CSSProperties } from 'react';
import { useMemo } from 'react';
import type { TabularGame } from '../../tasks/types';
import type { TranscriptRow } from '../charts/series';
import { HowTo } from '../charts/ChartFrame';
import { fixed3 } from '../format';
import { payoffGrids, type GameFrame } from '../gameFrame';
import { agentColor, agentTint } from '../theme';

const pct = (p: number) => `${Math.round(100 * p)} %`;

/** The bars' height transition, off while Run goes: it would re-lay and repaint them for 120 ms after every draw. */
const STILL = { transition: 'none' } as const;

/** From this many actions an agent's bars stand under its name, each label on two lines (styles.css `.many`). */
const MANY_ACTIONS = 5;

function AgentBars({ frame, game, still }: { frame: GameFrame; game: TabularGame; still: boolean }) {
  return (
    <div className="game-bars" data-testid="game-bars">
      {frame.marginals.map((row, j) => (
        <div key={j} className={row.length >= MANY_ACTIONS ? 'game-bar-row many' : 'game-bar-row'} style={{ '--agent': agentColor(j) } as CSSProperties} data-testid={`game-bars-${j}`}>
          <span className="agent-chip">agent {j}</span>
          <span className="game-bar-cells">
            {row.map((p, a) => (
              <span key={a} className="game-bar" title={`agent ${j} plays ${game.actionLabel(j, a)} on ${pct(p)} of its turns`}>
                <span className="game-bar-track" aria-hidden="true">
                  <span className="game-bar-fill" style={{ height: `${Math.max(0, Math.min(1, p)) * 100}%`, ...(still ? STILL : {}) }} />
                </span>
                <span className="game-bar-label">
                  {game.actionLabel(j, a)} <span className="muted">{pct(p)}</span>
                </span>
              </span>
            ))}
          </span>
        </div>
      ))}
    </div>
  );
}

function PayoffTables({ frame, game }: { frame: GameFrame; game: TabularGame }) {
  const grids = useMemo(() => payoffGrids(game), [game]);
  if (!grids) return null;
  const m = frame.marginals;
  const top = frame.top.moves.map((x) => x.action);
  const [lo, hi] = game.rewardRange;
  return (
    <div className="payoff-tables">
      {grids.map((grid, k) => (
        <table key={k} className="payoff" data-testid="payoff-table">
          <caption>{grids.length > 1 ? <>agent 2 plays {game.actionLabel(2, k)}</> : 'payoff'}</caption>
          <thead>
            <tr>
              <th scope="col" className="payoff-corner" title="rows: agent 0's action; columns: agent 1's">
                0 \ 1
              </th>
              {grid[0]!.map((_, c) => (
                <th key={c} scope="col" className="payoff-head" style={{ '--agent': agentColor(1) } as CSSProperties}>
                  {game.actionLabel(1, c)}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {grid.map((row, r) => (
              <tr key={r}>
                <th scope="row" className="payoff-head" style={{ '--agent': agentColor(0) } as CSSProperties}>
                  {game.actionLabel(0, r)}
                </th>
                {row.map((v, c) => {
                  const p = m[0]![r]! * m[1]![c]! * (grids.length > 1 ? m[2]![k]! : 1);
                  const isTop = top[0] === r && top[1] === c && (grids.length === 1 || top[2] === k);
                  const bad = hi > lo ? (hi - v) / (hi - lo) : 0;
                  return (
                    <td
                      key={c}
                      className={isTop ? 'payoff-top' : undefined}
                      data-testid={isTop ? 'payoff-top' : undefined}
                      title={`payoff ${fixed3(v)}; the team plays this joint action with probability ${pct(p)}`}
                      style={{ background: `rgba(31, 78, 121, ${(0.06 + 0.44 * p).toFixed(3)})`, color: bad > 0.7 ? '#8a1c1c' : undefined }}
                    >
                      {Number.isInteger(v) ? v : v.toFixed(1)}
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        </table>
      ))}
    </div>
  );
}

/** A table game's view at `frame` (null: nothing computed yet); `still`: no bar transitions (Run at work). */
export function TableGameView({ game, frame, where, still = false }: { game: TabularGame; frame: GameFrame | null; where: string; still?: boolean }) {
  return (
    <section className="chart game-view" data-testid="game-view" data-points={frame ? 1 : 0} aria-label="What does the team play?">
      <header className="chart-head">
        <h3 className="chart-title">What does the team play?</h3>
        <span className="muted small-note">{where}</span>
      </header>
      {frame ? (
        <>
          <div className="chart-readout" data-testid="game-top">
            <span>
              Most likely play:{' '}
              {frame.top.moves.map((x, i) => (
                <span key={i} className="game-move">
                  {i > 0 && ' · '}
                  <span className="agent-chip" style={{ '--agent': agentColor(x.agent) } as CSSProperties}>
                    agent {x.agent}
                  </span>{' '}
                  <b>{game.actionLabel(x.agent, x.action)}</b>
                </span>
              ))}{' '}
              → payoff <b>{fixed3(frame.top.reward)}</b> (probability {pct(frame.top.prob)})
            </span>
          </div>
          <div className="game-body">
            <PayoffTables frame={frame} game={game} />
            <AgentBars frame={frame} game={game} still={still} />
          </div>
        </>
      ) : (
        <div className="chart-empty">The team is being built.</div>
      )}
      <HowTo text={<>each agent&apos;s bars are how often it plays each action; the outlined cell is the joint action the team plays most.</>} />
    </section>
  );
}

/** A language team's view: one episode of the step in view. */
export function TranscriptGameView({ row, where }: { row: TranscriptRow | null; where: string }) {
  return (
    <section className="chart game-view" data-testid="game-view" data-points={row ? 1 : 0} aria-label="What does the team say?">
      <header className="chart-head">
        <h3 className="chart-title">What does the team say?</h3>
        <span className="muted small-note">{where}</span>
      </header>
      {row ? (
        <div className="game-episode" data-testid="game-episode">
          <div>
            <span className="muted">Prompt</span> <code>{row.prompt}</code> <span className="muted">answer</span> <code>{row.reference}</code>
          </div>
          {row.messages.map((msg, i) => (
            <div key={i} className="game-msg" style={{ '--agent': agentColor(msg.agent), background: agentTint(msg.agent, 0.1) } as CSSProperties}>
              <span className="agent-chip">agent {msg.agent}</span> <code>{msg.text.length === 0 ? '∅ (empty)' : msg.text}</code>
            </div>
          ))}
          <div className={row.correct ? 'verdict ok' : 'verdict wrong'}>
            {row.correct ? '✓ correct' : '✗ wrong'}, reward {fixed3(row.reward)}
            {row.reason ? ` (${row.reason})` : ''}
          </div>
        </div>
      ) : (
        <div className="chart-empty">Step an agent: one episode it trained on appears here, the rest under the charts.</div>
      )}
      <HowTo text={<>one episode of the step in view, each message in its agent&apos;s colour; the full batch is under the charts.</>} />
    </section>
  );
}
