/**
 * Sharing and files: "Copy link" (settings, seed and the current step in the URL hash — opening it
 * replays the run), "Export" (the experiment as a .satexp file: settings, metrics, agent weights),
 * "Import" (validated; a bad file gets a specific message and changes nothing; a SAT-style .yaml
 * opens its settings; a real run's log opens in the imported-run view, RunLogView.tsx) and
 * "Export for a real run" (the settings as runs of the SAT authors' trainer, verl and TeamTR,
 * with the task's data and reward.py, as one zip; docs/real-run.md).
 *
 * Not here: the formats (share.ts, savefile.ts) or start-up (boot.ts).
 */
import { useRef, useState } from 'react';
import { zipSync, strToU8 } from 'fflate';
import { experimentBytes, openExperimentBytes, openRecipeText, recipeOf, shareLink } from '../boot';
import { DEFAULT_MODELS, ENGINE_TITLES, type EngineName, type ModelMap } from '../../bridge/recipe';
import { openRunLogText, RUN_LOG_ACCEPT } from './RunLogView';
import { describeError } from '../session';
import { useSession } from '../sessionContext';
import { EXPERIMENT_EXTENSION } from '../savefile';
import { usePlayground } from '../store';

export function ShareBar() {
  const session = useSession();
  const status = usePlayground((s) => s.status);
  const [link, setLink] = useState<string | null>(null);
  const [recipeOpen, setRecipeOpen] = useState(false);
  const file = useRef<HTMLInputElement>(null);
  const working = status === 'busy' || status === 'running' || status === 'loading';

  const copy = async () => {
    try {
      const url = await shareLink(session);
      setLink(url);
      try {
        await navigator.clipboard.writeText(url);
        usePlayground.setState({ notice: 'Link copied. Opening it replays this run to this step.' });
      } catch {
        usePlayground.setState({ notice: 'Copy the link from the box (this page may not use the clipboard).' });
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
    if (/\.ya?ml$/i.test(f.name)) await openRecipeText(session, await f.text(), `“${f.name}”`);
    else if (f.name.endsWith(EXPERIMENT_EXTENSION)) await openExperimentBytes(session, new Uint8Array(await f.arrayBuffer()), `The file “${f.name}”`);
    else openRunLogText(f.size, () => f.text(), f.name);
    if (file.current) file.current.value = '';
  };

  return (
    <div className="sharebar">
      <button type="button" className="small" data-testid="copy-link" disabled={working} onClick={() => void copy()} title="A link to these settings and this step; opening it replays the run">
        Copy link
      </button>
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
      {recipeOpen && <RecipePanel />}
    </div>
  );
}

/** Saves `bytes` as a download named `name`. */
function download(bytes: BlobPart, name: string, type: string): void {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([bytes], { type }));
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

/**
 * The recipe: the Hugging Face ids for the zoo's sizes; per engine, its command or why it is not
 * exported; the verl overrides to copy; everything (configs, scripts, data, reward.py) as one zip.
 */
function RecipePanel() {
  const session = useSession();
  usePlayground((s) => s.config); // re-render when the settings change
  const [models, setModels] = useState<ModelMap>(DEFAULT_MODELS);
  let r;
  try {
    r = recipeOf(session, models);
  } catch (e) {
    return <div className="recipe-panel" role="alert">{describeError(e, '')}</div>;
  }
  const name = `${usePlayground.getState().preset}`;
  const zip = () => {
    const full = recipeOf(session, models, true);
    const files: Record<string, Uint8Array> = {};
    for (const f of full.files) files[`${name}/${f.path}`] = strToU8(f.text);
    if (full.verl.length > 0) files[`${name}/${name}.sat.yaml.verl.txt`] = strToU8(`${full.verl.join('\n')}\n`);
    download(zipSync(files).slice().buffer, `${name}.real-run.zip`, 'application/zip');
  };
  const any = Object.values(r.engines).some((e) => e.ok);
  return (
    <div className="recipe-panel" data-testid="recipe-panel" aria-label="Export for a real run">
      <p className="muted">The zoo's sizes as Hugging Face ids (placeholders: pick checkpoints for your task):</p>
      {(['S', 'M', 'L'] as const).map((size) => (
        <label key={size} className="recipe-model">
          {size}{' '}
          <input data-testid={`recipe-model-${size}`} value={models[size]} onChange={(e) => setModels({ ...models, [size]: e.target.value })} />
        </label>
      ))}
      <ul className="recipe-engines" data-testid="recipe-engines">
        {(Object.keys(r.engines) as EngineName[]).map((k) => {
          const e = r.engines[k];
          return (
            <li key={k} data-testid={`recipe-engine-${k}`} data-ok={e.ok}>
              <strong>{ENGINE_TITLES[k]}</strong>: {e.ok ? <code>{e.command}</code> : <>not exported — {e.refused.map((x) => `${x.setting}: ${x.message}`).join(' ')}</>}
            </li>
          );
        })}
      </ul>
      {any && (
        <button type="button" className="small" data-testid="recipe-zip" onClick={zip}>
          Download the runs, data and reward (zip)
        </button>
      )}
      {r.yaml !== null && (
        <button type="button" className="small" data-testid="recipe-download" onClick={() => download(r.yaml!, `${name}.sat.yaml`, 'application/yaml')}>
          Download SAT-style YAML
        </button>
      )}
      {r.verl.length > 0 && (
        <label className="recipe-verl">
          verl overrides ({r.verl.length}; {r.unmapped.length} settings have no counterpart in any engine — docs/real-run.md says why)
          <textarea readOnly data-testid="recipe-verl" rows={6} value={r.verl.join('\n')} onFocus={(e) => e.currentTarget.select()} />
        </label>
      )}
    </div>
  );
}
