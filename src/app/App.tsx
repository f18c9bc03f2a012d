/**
 * The page's layout, dense but calm (controls left, timeline top, charts in a grid, transcripts
 * below): header across the top; the settings column; the content area with the error banner, the
 * step bar, the team, the timeline, the charts and the stage table. The Claims view
 * (components/ClaimsView.tsx) takes the body's place while open.
 *
 * Not here: state (store/), actions (session.ts), or start-up (boot.ts).
 */
import { useState } from 'react';
import { ChartsPanel } from './components/ChartsPanel';
import { ClaimsView } from './components/ClaimsView';
import { Controls } from './components/Controls';
import { Header } from './components/Header';
import { RunLogView } from './components/RunLogView';
import { ShareBar } from './components/ShareBar';
import { StageTable } from './components/StageTable';
import { StepControls } from './components/StepControls';
import { TeamBuilder } from './components/TeamBuilder';
import { dismissError, usePlayground } from './store';

function Banners() {
  const error = usePlayground((s) => s.error);
  const notice = usePlayground((s) => s.notice);
  return (
    <>
      {error && (
        <div className="banner" role="alert" data-testid="error">
          <span>{error}</span>
          <button type="button" className="banner-close" aria-label="Dismiss" onClick={dismissError}>
            ×
          </button>
        </div>
      )}
      {notice && (
        <div className="notice" role="status" data-testid="notice">
          <span>{notice}</span>
          <button type="button" className="banner-close" aria-label="Dismiss" onClick={() => usePlayground.setState({ notice: null })}>
            ×
          </button>
        </div>
      )}
    </>
  );
}

export function App() {
  // The Claims view replaces the body while open; the playground stays mounted underneath.
  const [claims, setClaims] = useState(false);
  return (
    <div className="app">
      <Header />
      {claims && <ClaimsView onClose={() => setClaims(false)} />}
      <div className="body" style={claims ? { display: 'none' } : undefined}>
        <Controls />
        <main className="content">
          <Banners />
          <div className="topbar">
            <StepControls />
            <ShareBar />
            <button type="button" className="small" data-testid="open-claims" title="The five claims of docs/method.md §10b, measured: plots, verdicts, commands" onClick={() => setClaims(true)}>
              Claims ▸
            </button>
          </div>
          <TeamBuilder />
          <ChartsPanel />
          <RunLogView />
          <StageTable />
        </main>
      </div>
    </div>
  );
}
