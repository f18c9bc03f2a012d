/**
 * The top bar, one line on a projector: the page's name, the one sentence that says what SAT is and
 * what to press (a newcomer's first minute starts here), and where the agents run, always visible —
 * the page never hides which backend produced its numbers (backendLine.ts: the short line here, the
 * whole sentence on hover, and a visible warning when the page is not cross-origin isolated).
 *
 * The projector toggle sits here too (projector.ts), so it is one click from any screen.
 *
 * Not here: controls (Controls.tsx, StepControls.tsx) or any run state beyond the backend line.
 */
import { setProjector, usePlayground } from '../store';

export function Header() {
  const backend = usePlayground((s) => s.backend);
  const line = usePlayground((s) => s.backendLine);
  const projector = usePlayground((s) => s.projector);
  return (
    <header className="header">
      <h1>SAT Playground</h1>
      <p className="lede" data-testid="lede">
        <strong>Sequential Agent Tuning</strong> trains a team one agent at a time, each inside a KL trust region, with a certified bound on the team&apos;s gain. Press{' '}
        <strong>Step agent ▸</strong> and watch.
      </p>
      <button
        type="button"
        className="small projector-toggle"
        data-testid="projector-toggle"
        aria-pressed={projector}
        title="Projector mode: every number at least 16 px, the header on one line, the question on the first screen (remembered in this browser; a link's projector key turns it on)"
        onClick={() => setProjector(!usePlayground.getState().projector)}
      >
        {projector ? '▣ Projector on' : '▢ Projector'}
      </button>
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
