/**
 * Sharing and files: "Copy link" and beside it "Lesson link…" (LessonBuilder.tsx) (settings, seed and the current step in the URL hash — the
 * address bar always holds it, addressBar.ts — written to the clipboard; opening it replays the
 * run), "Export" (the experiment as a .satexp file: settings, metrics, agent weights),
 * "Import" (validated; a bad file gets a specific message and changes nothing; a SAT-style .yaml
 * opens its settings; a real run's log opens in the imported-run view, RunLogView.tsx) and
 * "Export for a real run" (the settings as runs of the SAT authors' trainer, verl and TeamTR,
 * with the task's data and reward.py, as one zip; docs/real-run.md).
 *
 * Not here: the formats (share.ts, savefile.ts) or start-up (boot.ts).
 */
import { lazy, Suspense, useRef, useState } from 'react';
import { experimentBytes, openExperimentBytes, shareLink } from '../boot';
import { openRunLogFile, RUN_LOG_ACCEPT } from './runLogState';
import { describeError } from '../errorText';
import { useSession } from '../sessionContext';
import { EXPERIMENT_EXTENSION } from '../savefile';
import { usePlayground } from '../store';

/** The real-run export (the YAML writer and reader) loads on first use. */
const RecipePanel = lazy(async () => ({ default: (await import('./RecipePanel')).RecipePanel }));
/** The lesson-link builder loads on first use. */
const LessonBuilder = lazy(async () => ({ default: (await import('./LessonBuilder')).LessonBuilder }));

export function ShareBar() {
  const session = useSession();
  const status = usePlayground((s) => s.status);
  const [link, setLink] = useState<string | null>(null);
  const [recipeOpen, setRecipeOpen] = useState(false);
  const [lessonOpen, setLessonOpen] = useState(false);
  const file = useRef<HTMLInputElement>(null);
  const working = status === 'busy' || status === 'running' || status === 'loading';

  const copy = async () => {
    try {
      const url = await shareLink(session);
      setLink(url);
      // The address bar holds the link too, so copying the address works as well.
      history.replaceState(history.state, '', url);
      try {
        await navigator.clipboard.writeText(url);
        usePlayground.setState({ notice: 'Link copied, and in the address bar. Opening it replays this run to this step.' });
      } catch {
        usePlayground.setState({ notice: 'The link is in the address bar and in the box: copy it from either (this page may not use the clipboard).' });
      }
    } catch (e) {
      usePlayground.setState({ error: describeError(e, 'Nothing was changed.') });
    }
  };

  const exportFile = () => {
    const bytes = experimentBytes(session);
    if (!bytes) {
      usePlayground.setState({ notice: 'Nothing to export yet.' });
      return;
    }
    const s = usePlayground.getState();
    const blob = new Blob([bytes.slice().buffer], { type: 'application/octet-stream' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = `sat-${s.preset}-seed${s.config?.seed ?? 0}-stage${s.stages.length}${EXPERIMENT_EXTENSION}`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  };

  const importFile = async (f: File | undefined) => {
    if (!f) return;
    if (/\.ya?ml$/i.test(f.name)) await (await import('../recipeFiles')).openRecipeFile(session, f, `“${f.name}”`);
    else if (f.name.endsWith(EXPERIMENT_EXTENSION)) await openExperimentBytes(session, new Uint8Array(await f.arrayBuffer()), `The file “${f.name}”`);
    else await openRunLogFile(f, f.name);
    if (file.current) file.current.value = '';
  };

  return (
    <div className="sharebar">
      <button type="button" className="small" data-testid="copy-link" disabled={working} onClick={() => void copy()} title="A link to these settings and this step; opening it replays the run">
        Copy link
      </button>
      <button type="button" className="small" data-testid="lesson-link-open" onClick={() => setLessonOpen((o) => !o)} aria-expanded={lessonOpen} title="Build a lesson link: preset, seed, the stage to open at, what to hide, your question — with a preview">
        Lesson link…
      </button>
      {lessonOpen && (
        <Suspense fallback={<div className="lesson-builder muted">Loading…</div>}>
          <LessonBuilder onClose={() => setLessonOpen(false)} />
        </Suspense>
      )}
      {link && <input className="share-link" data-testid="share-link" readOnly value={link} onFocus={(e) => e.currentTarget.select()} aria-label="Share link" />}
      <button type="button" className="small" data-testid="export" disabled={working} onClick={exportFile} title="Save settings, metrics and agent weights as a file">
        Export
      </button>
      <label className="file-btn" title="Open an exported experiment file, a real run's SAT-style YAML (its settings), or a real run's log (verl, TeamTR, W&B, the SAT authors' trainer)">
        <input ref={file} type="file" accept={`${EXPERIMENT_EXTENSION},.yaml,.yml,${RUN_LOG_ACCEPT}`} data-testid="import" disabled={working} onChange={(e) => void importFile(e.target.files?.[0])} />
        <span>Import</span>
      </label>
      <button type="button" className="small" data-testid="export-recipe" disabled={working} onClick={() => setRecipeOpen((o) => !o)} title="These settings as real runs: the SAT authors' trainer, verl and TeamTR, with the task's data and reward (docs/real-run.md)" aria-expanded={recipeOpen}>
        Export for a real run
      </button>
      {recipeOpen && (
        <Suspense fallback={<div className="recipe-panel muted">Loading…</div>}>
          <RecipePanel />
        </Suspense>
      )}
    </div>
  );
}
