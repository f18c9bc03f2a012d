/**
 * "Export for a real run": the Hugging Face ids the zoo's sizes map to; per engine, its command and
 * what it runs differently, or why it is not exported; the verl overrides to copy; everything (configs, scripts, the task's
 * data, reward.py) as one zip (docs/real-run.md). Loaded on first open, with the YAML library
 * (ShareBar.tsx).
 *
 * Not here: the mapping itself (src/bridge/recipe.ts).
 */
import { strToU8, zipSync } from 'fflate';
import { useState } from 'react';
import { DEFAULT_MODELS, ENGINE_TITLES, type EngineName, type ModelMap } from '../../bridge/recipe';
import { recipeOf } from '../recipeFiles';
import { describeError } from '../errorText';
import { useSession } from '../sessionContext';
import { usePlayground } from '../store';

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

export function RecipePanel() {
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
              {e.ok && e.differs.length > 0 && (
                <details className="recipe-differs" data-testid={`recipe-differs-${k}`}>
                  <summary>runs differently from the playground: {e.differs.map((d) => d.setting).join(', ')}</summary>
                  <ul>
                    {e.differs.map((d) => (
                      <li key={d.setting}>
                        <code>{d.setting}</code>: {d.message}
                      </li>
                    ))}
                  </ul>
                </details>
              )}
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
