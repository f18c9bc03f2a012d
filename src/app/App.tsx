/**
 * The page's layout (UX.md: controls left, content right): header across the top, the controls
 * column, and the content area with an error banner and the stage table.
 *
 * Not here: state (store.ts), actions (run.ts), or the later timeline and charts — they will take
 * their place in the content area beside StageTable.
 */
import { Controls } from './components/Controls';
import { Header } from './components/Header';
import { StageTable } from './components/StageTable';
import { usePlayground } from './store';

function ErrorBanner() {
  const error = usePlayground((s) => s.error);
  if (!error) return null;
  return (
    <div className="banner" role="alert" data-testid="error">
      <span>{error}</span>
      <button type="button" className="banner-close" aria-label="Dismiss" onClick={() => usePlayground.setState({ error: null })}>
        ×
      </button>
    </div>
  );
}

export function App() {
  return (
    <div className="app">
      <Header />
      <div className="body">
        <Controls />
        <main className="content">
          <ErrorBanner />
          <StageTable />
        </main>
      </div>
    </div>
  );
}
