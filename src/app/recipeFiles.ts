/**
 * Recipes for a real run (docs/real-run.md) from the page: the current settings as a SAT-style YAML
 * and verl overrides, and a YAML's settings opened as a fresh team. Its own module so the YAML
 * library loads only when someone exports or imports one.
 *
 * Not here: the mapping (src/sat/recipe.ts) or the panel (components/RecipePanel.tsx).
 */
import { SatError } from '../core/errors';
import { readRecipe, recipe, type ModelMap, type Recipe } from '../sat/recipe';
import type { Session } from './session';

/** A_max the recipe writes for aMax = 0: the running experiment's own (the task's reward range). */
function taskAMax(session: Session): number {
  return session.currentExperiment()?.aMax ?? 1;
}

/** The current settings as a real run's SAT-style YAML and verl overrides. */
export function recipeOf(session: Session, models: ModelMap): Recipe {
  const cfg = session.store.getState().config;
  if (!cfg) throw new SatError('state', 'Nothing to export yet: the team is still being built.');
  return recipe(cfg, models, taskAMax(session));
}

/** Opens a SAT-style YAML's settings (a bad file gets its message and changes nothing). */
export async function openRecipeText(session: Session, text: string, source: string): Promise<boolean> {
  const s = session.store.getState();
  if (!s.config) return false;
  let cfg;
  try {
    cfg = readRecipe(text, s.config, { aMaxOfTask: taskAMax(session) });
  } catch (e) {
    session.store.setState({ error: `${source}: ${e instanceof Error ? e.message : String(e)} Your current experiment was not changed.` });
    return false;
  }
  await session.openConfig(cfg, s.preset, `Opening the settings of ${source}…`);
  session.store.setState({ notice: `Opened the settings of ${source} (every key it maps; the others kept their values — docs/real-run.md).` });
  return true;
}

