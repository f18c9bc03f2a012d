/**
 * The top bar: the page's name, the one sentence that says what SAT is and what to press
 * (UX.md "First minute"), and the backend in use, always visible (UX.md "Always honest").
 *
 * Not here: controls (Controls.tsx) or any run state.
 */

export function Header() {
  return (
    <header className="header">
      <div className="header-text">
        <h1>SAT Playground</h1>
        <p className="lede" data-testid="lede">
          <strong>Sequential Agent Tuning</strong> trains a team of agents one at a time: each sees its
          predecessors’ updates, moves only inside a KL trust region, and every stage ends with a
          certified lower bound on how much the team improved. Pick a preset on the left and press{' '}
          <strong>Run stages</strong>.
        </p>
      </div>
      <div
        className="backend"
        data-testid="backend"
        title="These presets use small tables of logits, one per agent, so they run on the CPU in this tab. The WebGPU backend is for the language-model presets, which come later."
      >
        <span className="backend-dot" aria-hidden="true" />
        Backend: CPU (tabular agents)
      </div>
    </header>
  );
}
