/**
 * What an export to one real engine is: the files it writes (a config, a command, the overrides)
 * or, when the playground's settings ask for something the engine cannot run, the refusals — each
 * naming the setting, what the engine offers instead and what to change. An engine export is
 * never written "nearly right": a setting the engine would run differently is refused or said.
 *
 * Not here: the engines' mappings (satTrainer.ts, verl.ts, teamtr.ts), the task's data (taskData.ts).
 */
import type { ConfigKey } from '../sat/config';

export type EngineName = 'satTrainer' | 'verl' | 'teamtr';

/** People's names of the engines, for messages and the page. */
export const ENGINE_TITLES: Readonly<Record<EngineName, string>> = {
  satTrainer: "the SAT authors' trainer (Yydc/SAT-AAMAS scripts/train.py)",
  verl: 'verl (verl-project/verl, verl.trainer.main_ppo)',
  teamtr: 'TeamTR (Yydc/TeamTR, its verl.trainer.main_ppo)',
};

/** A setting the engine cannot carry as the playground runs it. */
export interface Refusal {
  readonly setting: ConfigKey;
  readonly message: string;
}

/**
 * A setting an engine carries but computes differently from the playground for this config (a
 * sequence ratio that is length-normalised, a KL estimated against a reference model, a radius no
 * monitor enforces): the export runs, and these say what its numbers will not match.
 */
export type Difference = Refusal;

/** One file of an export: a path relative to where the recipe is written, and its text. */
export interface ExportFile {
  readonly path: string;
  readonly text: string;
}

export type EngineExport =
  | {
      readonly ok: true;
      readonly engine: EngineName;
      /** Hydra overrides (`key=value`); empty for the SAT authors' trainer, whose config is its YAML file. */
      readonly overrides: readonly string[];
      /** The command that runs it, from the folder the recipe was written to. */
      readonly command: string;
      readonly files: readonly ExportFile[];
      /** What this engine runs differently from the playground with these settings. */
      readonly differs: readonly Difference[];
    }
  | { readonly ok: false; readonly engine: EngineName; readonly refused: readonly Refusal[] };

/** A Hydra override's value as its grammar wants it: lists in brackets, strings with spaces quoted. */
export function hydraValue(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map((x) => (typeof x === 'string' ? `'${x}'` : String(x))).join(',')}]`;
  if (typeof v === 'string') return /^[\w./:@${}-]+$/.test(v) ? v : `'${v}'`;
  return String(v);
}

/** `key=value` lines from an ordered list of pairs. */
export function overridesOf(pairs: readonly (readonly [string, unknown])[]): string[] {
  return pairs.map(([k, v]) => `${k}=${hydraValue(v)}`);
}

/** A script's or YAML's text with its engine's differences added as comments at the end of its leading comment block. */
export function withDiffers(text: string, differs: readonly Difference[]): string {
  if (differs.length === 0) return text;
  const lines = text.split('\n');
  const at = lines.findIndex((l) => !l.startsWith('#'));
  lines.splice(at, 0, '# Runs differently from the playground (docs/real-run.md):', ...differs.map((d) => `#   ${d.setting}: ${d.message}`));
  return lines.join('\n');
}
