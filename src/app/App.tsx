/**
 * The page's layout, dense but calm (controls left, timeline top, charts in a grid, transcripts
 * below): header across the top; the settings column; the content area with the error banner, the
 * step bar, the team, the timeline, the charts and the stage table.
 *
 * Not here: state (store/), actions (session.ts), or start-up (boot.ts).
 */
import { ChartsPanel } from './components/ChartsPanel';
import { Controls } from './components/Controls';
import { Header } from './components/Header';
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
  return (
    <div className="app">
      <Header />
      <div className="body">
        <Controls />
        <main className="content">
          <Banners />
          <div className="topbar">
            <StepControls />
            <ShareBar />
          </div>
          <TeamBuilder />
          <ChartsPanel />
          <StageTable />
        </main>
      </div>
    </div>
  );
}
