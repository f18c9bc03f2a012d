/**
 * The top bar, one line on a projector: the page's name, the one sentence that says what SAT is and
 * what to press (a newcomer's first minute starts here), and where the agents run, always visible —
 * the page never hides which backend produced its numbers (backendLine.ts: the short line here, the
 * whole sentence on hover, and a visible warning when the page is not cross-origin isolated).
 *
 * Not here: controls (Controls.tsx, StepControls.tsx) or any run state beyond the backend line.
 */
import { usePlayground } from '../store';

export function Header() {
  const backend = usePlayground((s) => s.backend);
  const line = usePlayground((s) => s.backendLine);
  return (
    <header className="header">
      <h1>SAT Playground</h1>
      <p className="lede" data-testid="lede">
        <strong>Sequential Agent Tuning</strong> trains a team one agent at a time, each inside a KL trust region, with a certified bound on the team&apos;s gain. Press{' '}
        <strong>Step agent ▸</strong> and watch the timeline, the J chart and the game.
      </p>
      <div className="backend-box">
        <div className="backend" data-testid="backend" title={line?.detail ?? backend}>
          <span className="backend-dot" aria-hidden="true" />
          {line?.short ?? 'Starting the agents…'}
        </div>
        {line?.warn && (
          <div className="backend-warn" data-testid="backend-warn" title={line.warn}>
            ⚠ {line.warn.split(':')[0]}
          </div>
        )}
      </div>
    </header>
  );
}
