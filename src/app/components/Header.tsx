/**
 * The top bar: the page's name, the one sentence that says what SAT is and what to press
 * (a newcomer's first minute starts here), and where the agents run, always visible: the page
 * never hides which backend produced its numbers. The line is its short form (what runs where);
 * the why — a fallback's reason — is on hover, so the header stays one band tall on a projector.
 *
 * Not here: controls (Controls.tsx, StepControls.tsx) or any run state beyond the backend line.
 */
import { backendShort } from '../format';
import { usePlayground } from '../store';

export function Header() {
  const backend = usePlayground((s) => s.backend);
  return (
    <header className="header">
      <div className="header-text">
        <h1>SAT Playground</h1>
        <p className="lede" data-testid="lede">
          <strong>Sequential Agent Tuning</strong> trains a team of agents one at a time: each sees its predecessors’ updates, moves only inside a KL trust region, and every
          stage ends with a certified lower bound on how much the team improved. Press <strong>Step agent ▸</strong> and watch the timeline and the charts.
        </p>
      </div>
      <div className="backend" data-testid="backend" title={`Where the agents' models, optimizers and kernels run: ${backend}`}>
        <span className="backend-dot" aria-hidden="true" />
        {shortTeamBackend(backend)}
      </div>
    </header>
  );
}

/** "3 Web Workers, cpu (TypeScript) — why… backend" → "3 Web Workers, cpu (TypeScript)". */
function shortTeamBackend(line: string): string {
  return backendShort(line).replace(/ backend$/, '');
}
