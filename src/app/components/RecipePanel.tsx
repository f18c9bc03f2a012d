/**
 * "Export for a real run": the Hugging Face ids the zoo's sizes map to, the settings as a SAT-style
 * YAML to download, and the verl overrides to copy (docs/real-run.md). Loaded on first open, with
 * the YAML library (ShareBar.tsx).
 *
 * Not here: the mapping itself (src/sat/recipe.ts).
 */
import { useState } from 'react';
import { DEFAULT_MODELS, type ModelMap } from '../../sat/recipe';
import { recipeOf } from '../recipeFiles';
import { describeError } from '../session';
import { useSession } from '../sessionContext';
import { usePlayground } from '../store';

/** The recipe: the Hugging Face ids for the zoo's sizes, the YAML to download, the verl overrides to copy. */
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
  const download = () => {
    const s = usePlayground.getState();
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([r.yaml], { type: 'application/yaml' }));
    a.download = `${s.preset}.sat.yaml`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  };
  return (
    <div className="recipe-panel" data-testid="recipe-panel" aria-label="Export for a real run">
      <p className="muted">The zoo's sizes as Hugging Face ids (placeholders: pick checkpoints for your task):</p>
      {(['S', 'M', 'L'] as const).map((size) => (
        <label key={size} className="recipe-model">
          {size}{' '}
          <input data-testid={`recipe-model-${size}`} value={models[size]} onChange={(e) => setModels({ ...models, [size]: e.target.value })} />
        </label>
      ))}
      <button type="button" className="small" data-testid="recipe-download" onClick={download}>
        Download SAT-style YAML
      </button>
      <label className="recipe-verl">
        verl overrides ({r.verl.length}; {r.unmapped.length} settings have no counterpart — docs/real-run.md says why)
        <textarea readOnly data-testid="recipe-verl" rows={6} value={r.verl.join('\n')} onFocus={(e) => e.currentTarget.select()} />
      </label>
    </div>
  );
}
