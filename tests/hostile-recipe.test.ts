/**
 * Hostile recipe YAML against the import (src/bridge/recipe.ts readRecipe), one regression per
 * class: flow sequences nested 100,000 deep (and 8,000 on lines within the caps), block nesting
 * and one-line `- - - …` entries past the depth cap, 20,000 quoted keys (single- and
 * double-quoted, with a space before the colon), unknown tags (`!!js/function`,
 * `!!python/object/apply`, a local `!foo`) and a %TAG directive — each refused by name before the
 * YAML library parses, and an exported recipe still read back whole.
 *
 * Not here: the recipe's mapping (tests/recipe.test.ts), fuzzing (tests/hostile-fuzz.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { checkRecipeYaml, readRecipe, recipe } from '../src/bridge/recipe';
import { FormatError } from '../src/core/errors';
import { RECIPE_MAX_DEPTH } from '../src/core/limits';
import { parseConfig } from '../src/sat/config';
import { presetConfig } from '../src/sat/presets';

const base = parseConfig({ ...presetConfig('arith-team'), protocol: 'independent', swapAgent: -1, order: 'fixed' });
const exported = recipe(base).yaml!;

function refusal(text: string): string {
  try {
    readRecipe(text, base);
  } catch (e) {
    expect(e).toBeInstanceOf(FormatError);
    return (e as Error).message;
  }
  throw new Error('accepted');
}

describe('hostile recipe YAML', () => {
  it('an exported recipe passes the checks and reads back whole', () => {
    expect(readRecipe(exported, base)).toEqual(base);
  });

  it('flow sequences nested 100,000 deep, or 8,000 over short lines, are refused before the parser recurses', () => {
    expect(refusal(`sat: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`)).toMatch(/^Line 1 of this recipe is longer than 16,384 characters/);
    const lines = Array.from({ length: 1_000 }, () => '[[[[[[[[').join('\n  ');
    expect(refusal(`sat: ${lines}\n  ${']'.repeat(8_000)}\n`)).toBe(`Line 4 of this recipe nests more than ${RECIPE_MAX_DEPTH} levels deep; a recipe nests a few (docs/models.md, "Input limits"). Nothing was read.`);
  });

  it('block nesting and one-line entries past the depth cap are refused; a few levels are fine', () => {
    const block = (n: number) => `${Array.from({ length: n }, (_, i) => `${' '.repeat(i)}k${i}:`).join('\n')} 1\n`;
    expect(refusal(block(RECIPE_MAX_DEPTH + 8))).toMatch(/^Line 33 of this recipe nests more than 32 levels deep/);
    expect(refusal(`sat:\n  ${'- '.repeat(5_000)}1\n`)).toMatch(/^Line 2 of this recipe nests more than 32 levels deep/);
    // entries on the line of a key are no YAML: the library's own message, not a nesting count
    expect(refusal(`sat: ${'- '.repeat(5_000)}1\n`)).toMatch(/^This is not a YAML file: Unexpected block-seq-ind on same line with key at line 1/);
    expect(refusal(block(8))).toMatch(/no "sat" section/);
  });

  it('the nesting is counted exactly: compact sequences continued on deeper lines, flow inside block, odd indents', () => {
    // 8 compact levels a line, each line inside the last entry of the one before: sat (1) + 8 × 4 = 33 levels on line 5
    const compact = Array.from({ length: 5 }, (_, k) => `${' '.repeat(16 * k)}${'- '.repeat(7)}-`).join('\n');
    expect(refusal(`sat:\n${compact.replace(/^/gm, '  ')} x\n`)).toMatch(/^Line 5 of this recipe nests more than 32 levels deep/);
    // exactly at the cap is read on (and then refused for what it holds); one level more is not
    const block = (n: number, step: number) => `${Array.from({ length: n }, (_, i) => `${' '.repeat(i * step)}k${i}:`).join('\n')} 1\n`;
    expect(() => checkRecipeYaml(block(RECIPE_MAX_DEPTH, 3))).not.toThrow();
    expect(refusal(block(RECIPE_MAX_DEPTH + 1, 3))).toMatch(/^Line 33 of this recipe nests more than 32 levels deep/);
    expect(refusal(block(RECIPE_MAX_DEPTH + 1, 5))).toMatch(/^Line 33 of this recipe nests more than 32 levels deep/);
    const mixed = (flow: number) => `${block(16, 1).slice(0, -3)} ${'['.repeat(flow)}1${']'.repeat(flow)}\n`; // 16 block maps, then flow
    expect(() => checkRecipeYaml(mixed(16))).not.toThrow();
    expect(refusal(mixed(17))).toMatch(/^Line 16 of this recipe nests more than 32 levels deep/);
    expect(() => checkRecipeYaml(`sat: ${'['.repeat(31)}1${']'.repeat(31)}\n`)).not.toThrow();
    expect(refusal(`sat: ${'['.repeat(32)}1${']'.repeat(32)}\n`)).toMatch(/^Line 1 of this recipe nests more than 32 levels deep/);
    // a tab as indentation: the library's message, by line
    expect(refusal('sat:\n\t- x\n')).toMatch(/^This is not a YAML file: Tabs are not allowed as indentation at line 2/);
  });

  it('lines stepping right that open nothing are not nesting: a legitimate recipe with a deep block scalar and indented comments is read', () => {
    const steps = (n: number, text: string) => Array.from({ length: n }, (_, i) => `${' '.repeat(i + 1)}${text}`).join('\n');
    expect(readRecipe(`${exported}${steps(40, '# a comment')}\n`, base)).toEqual(base);
    expect(readRecipe(`${exported}notes: |\n${steps(40, 'x')}\n`, base)).toEqual(base);
    expect(readRecipe(`${exported}notes: a plain scalar\n${steps(40, 'continued')}\n`, base)).toEqual(base);
  });

  it('20,000 quoted keys are counted, whatever their quotes', () => {
    for (const q of ['"', "'"]) {
      const rows = Array.from({ length: 4_000 }, (_, r) => Array.from({ length: 5 }, (_, i) => `${q}${r * 5 + i}${q} : 1`).join(','));
      expect(refusal(`{${rows.join(',\n')}}\n`)).toBe('This recipe has more than 5,000 keys (quoted ones included); the playground reads at most that many. Nothing was read.');
    }
  });

  it('unknown tags and %TAG directives are refused by name', () => {
    expect(refusal(`${exported}\nx: !!js/function "function () {}"\n`)).toMatch(/^Line \d+ of this recipe carries the YAML tag "!!js\/function", which the playground does not read/);
    expect(refusal(`${exported}\nx: !!python/object/apply:os.system ["ls"]\n`)).toContain('the YAML tag "!!python/object/apply:os.system"');
    expect(refusal('sat: !foo 1\n')).toContain('the YAML tag "!foo"');
    expect(refusal('%TAG !! tag:example.com,2000:\n---\nsat: !!str 1\n')).toBe('Line 1 of this recipe declares a %TAG directive, which the playground does not read. Nothing was read.');
    expect(() => readRecipe(exported.replace('sat:', 'sat: !!map'), base)).not.toThrow();
  });
  it('a section that is not a map is refused by name, saying what it is and what is read there; an empty "sat" is no "sat" section', () => {
    const edited = (from: RegExp, to: string) => {
      const t = exported.replace(from, to);
      expect(t).not.toBe(exported);
      return t;
    };
    // the exported "sat:" map replaced by a list of its lines' values
    expect(refusal(edited(/^sat:\n((?: {2}.*\n)+)/m, 'sat:\n  - 0.2\n  - 4\n  - static\n'))).toBe('The recipe\'s "sat" section is a list of 3 items, not the map of settings (epsilon, group_size, agents, …) the SAT authors\' trainer reads there. Nothing was read.');
    expect(refusal(edited(/^sat:\n((?: {2}.*\n)+)/m, 'sat: [0.2, 4]\n'))).toMatch(/^The recipe's "sat" section is a list of 2 items, not the map/);
    expect(refusal(edited(/^sat:\n((?: {2}.*\n)+)/m, 'sat:\n'))).toMatch(/no "sat" section/);
    expect(refusal(edited(/^training:\n((?: {2}.*\n)+)/m, 'training: fast\n'))).toBe('The recipe\'s "training" section is the text "fast", not the map of settings (learning_rate, weight_decay, num_stages) the SAT authors\' trainer reads there. Nothing was read.');
    expect(refusal(edited(/^( {2})kl_ctrl:\n((?: {4}.*\n)+)/m, '  kl_ctrl: 0.1\n'))).toMatch(/^The recipe's "algorithm\.kl_ctrl" section is the number 0\.1, not the map/);
    expect(refusal('- sat: 1\n')).toMatch(/no "sat" section/);
  });
});
