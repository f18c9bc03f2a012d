/**
 * Recipes for a real run (docs/real-run.md) from the page: the current settings as runs of the SAT
 * authors' trainer, verl and TeamTR, and a SAT-style YAML's settings opened as a fresh team. Its
 * own module so the YAML library loads only when someone exports or imports one.
 *
 * Not here: the mapping (src/bridge/recipe.ts) or the panel (components/RecipePanel.tsx).
 */
import { checkFileBytes, RECIPE_LIMITS } from '../bridge/limits';
import { recipe, type ModelMap, type Recipe } from '../bridge/recipe';
import { SatError } from '../core/errors';
import { checkInput } from './inputCheck';
import type { Session } from './session';

/** A_max the recipe writes for aMax = 0: the running experiment's own (the task's reward range). */
function taskAMax(session: Session): number {
  return session.currentExperiment()?.aMax ?? 1;
}

/** The current settings as real runs (docs/real-run.md); `data` adds the task's data files and reward.py. */
export function recipeOf(session: Session, models: ModelMap, data = false): Recipe {
  const s = session.store.getState();
  if (!s.config) throw new SatError('state', 'Nothing to export yet: the team is still being built.');
  return recipe(s.config, models, taskAMax(session), `${s.preset}.sat.yaml`, { data });
}

/** Opens a SAT-style YAML's settings, read in the budgeted input worker (a bad file gets its message and changes nothing). */
/** A picked recipe file: refused by its size before its text is read (a 37 MB one is not read and copied on this thread), else opened. */
export async function openRecipeFile(session: Session, f: { readonly size: number; text(): Promise<string> }, source: string): Promise<boolean> {
  try {
    checkFileBytes(f.size, RECIPE_LIMITS, 'recipe');
  } catch (e) {
    session.store.setState({ error: `${source}: ${e instanceof Error ? e.message : String(e)} Your current experiment was not changed.` });
    return false;
  }
  return openRecipeText(session, await f.text(), source);
}

export async function openRecipeText(session: Session, text: string, source: string): Promise<boolean> {
  const s = session.store.getState();
  if (!s.config) return false;
  let cfg;
  try {
    cfg = await checkInput('recipe', { text, base: s.config, aMaxOfTask: taskAMax(session) }, source);
  } catch (e) {
    session.store.setState({ error: `${source}: ${e instanceof Error ? e.message : String(e)} Your current experiment was not changed.` });
    return false;
  }
  await session.openConfig(cfg, s.preset, `Opening the settings of ${source}…`);
  session.store.setState({ notice: `Opened the settings of ${source} (every key it maps; the others kept their values — docs/real-run.md).` });
  return true;
}
