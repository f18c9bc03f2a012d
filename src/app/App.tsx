/**
 * The page's layout, built for the first screen (docs: README "The playground"): a one-line header;
 * the presets and the folded settings on the left; on the right the step bar, the folded team
 * builder, the timeline, then the J chart beside the game view, then the other charts and the
 * stage table. A link's `<panel>_hide` flags (panels.ts) take panels away for a lesson layout. The
 * Claims view (components/ClaimsView.tsx) takes the body's place while open. On a narrow screen (a
 * tablet in portrait, ≤ 900 px) the left column is a drawer opened from the top of the page
 * (`Presets` / `Settings`), so the run comes first and the gallery is one tap away.
 *
 * Not here: state (store/), actions (session.ts), or start-up (boot.ts).
 */
import { lazy, Suspense, useEffect, useState } from 'react';
import { isLlmTask } from '../sat/config';
import { ChartsPanel } from './components/ChartsPanel';
import { Controls } from './components/Controls';
import { Fold } from './components/Fold';
import { Header } from './components/Header';
import { RunLogSlot } from './components/runLogState';
import { ShareBar } from './components/ShareBar';
import { StageTable } from './components/StageTable';
import { SwapAnnouncement } from './components/SwapCard';
import { StepControls } from './components/StepControls';
import { TeamBuilder, TeamSummary } from './components/TeamBuilder';
import { shown } from './panels';
import { dismissError, usePlayground } from './store';

/** The Claims view and its statistics code load on first open. */
const ClaimsView = lazy(async () => ({ default: (await import('./components/ClaimsView')).ClaimsView }));

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

/** The team builder, folded to one line (the agents' colours and σ); a language team's opens by default (its cards hold the models and checkpoints). */
function TeamFold() {
  const task = usePlayground((s) => s.config?.task);
  const missing = usePlayground((s) => s.seats.some((x) => x.missing));
  if (!task) return null;
  const llm = isLlmTask(task);
  return (
    <Fold key={llm || missing ? 'lm' : 'table'} name={llm || missing ? 'team-lm' : 'team'} open={missing} className="team-fold" summary={<TeamSummary />}>
      <TeamBuilder />
    </Fold>
  );
}

/** Opens the left column's drawer (narrow screens) at the gallery or the settings; CSS shows the bar only there. */
function DrawerBar({ open }: { open: (at: 'gallery' | 'settings') => void }) {
  const hide = usePlayground((s) => s.hide);
  const gallery = !hide.includes('preset');
  const settings = shown(hide, 'settings');
  if (!gallery && !settings) return null;
  return (
    <div className="drawer-bar" data-testid="drawer-bar">
      {gallery && (
        <button type="button" className="small" data-testid="open-gallery" onClick={() => open('gallery')}>
          ☰ Presets and question
        </button>
      )}
      {settings && (
        <button type="button" className="small" data-testid="open-settings" onClick={() => open('settings')}>
          ⚙ Settings
        </button>
      )}
    </div>
  );
}

export function App() {
  // The Claims view replaces the body while open; the playground stays mounted underneath.
  const [claims, setClaims] = useState(false);
  const hide = usePlayground((s) => s.hide);
  const projector = usePlayground((s) => s.projector);
  /** The left column's drawer on narrow screens: closed, or open at the gallery or the settings. */
  const [drawer, setDrawer] = useState<'gallery' | 'settings' | null>(null);
  useEffect(() => {
    if (!drawer) return;
    const panel = document.querySelector<HTMLElement>('.controls-drawer .controls');
    if (drawer === 'settings') {
      const fold = document.querySelector<HTMLDetailsElement>('.controls-drawer [data-testid="fold-settings"]');
      if (fold && !fold.open) fold.querySelector('summary')?.click();
      fold?.scrollIntoView({ block: 'start' });
    } else panel?.scrollTo({ top: 0 });
    panel?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') setDrawer(null);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [drawer]);
  return (
    <div className={projector ? 'app projector' : 'app'} data-projector={projector ? 'on' : 'off'}>
      {/* Focus moves by script: the hash is the share link (addressBar.ts), never an anchor. */}
      <a
        className="skip-link"
        href="#step-controls"
        data-testid="skip-link"
        onClick={(e) => {
          e.preventDefault();
          document.getElementById('step-controls')?.querySelector<HTMLButtonElement>('button:not(:disabled)')?.focus();
        }}
      >
        Skip to the step controls
      </a>
      <Header />
      {claims && (
        <Suspense fallback={<p className="muted claims-loading">Loading the claims…</p>}>
          <ClaimsView onClose={() => setClaims(false)} />
        </Suspense>
      )}
      <div className={`body${shown(hide, 'settings') || !hide.includes('preset') ? '' : ' body-wide'}`} style={claims ? { display: 'none' } : undefined}>
        <div className={`controls-drawer${drawer ? ' open' : ''}`} data-testid="controls-drawer" data-open={drawer ? 1 : 0}>
          <button type="button" className="small drawer-close" data-testid="close-drawer" onClick={() => setDrawer(null)}>
            ✕ Close
          </button>
          <Controls />
        </div>
        {drawer && <div className="drawer-backdrop" aria-hidden="true" onClick={() => setDrawer(null)} />}
        <main className="content">
          <DrawerBar open={setDrawer} />
          <Banners />
          <div className="topbar">
            <StepControls />
            <div className="topbar-right">
              {shown(hide, 'files') && <ShareBar />}
              {shown(hide, 'claims') && (
                <button type="button" className="small" data-testid="open-claims" title="The five claims of docs/method.md §10b, measured: plots, verdicts, commands" onClick={() => setClaims(true)}>
                  Claims ▸
                </button>
              )}
            </div>
          </div>
          <SwapAnnouncement />
          {shown(hide, 'team') && <TeamFold />}
          <ChartsPanel />
          <RunLogSlot />
          {shown(hide, 'table') && <StageTable />}
        </main>
      </div>
    </div>
  );
}
