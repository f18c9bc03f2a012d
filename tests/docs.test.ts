/**
 * Docs stay true: the settings table in docs/method.md is exactly what the config table generates,
 * and every setting of CONFIG appears in it (run `npm run docs:settings` after changing a setting).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { METHOD_DOC, withSettingsTable } from '../src/cli/settingsDoc';
import { CONFIG_KEYS } from '../src/sat/config';

describe('docs', () => {
  it('the settings table of docs/method.md matches CONFIG', () => {
    const doc = readFileSync(METHOD_DOC, 'utf8');
    expect(withSettingsTable(doc), 'stale: run npm run docs:settings').toBe(doc);
    for (const k of CONFIG_KEYS) expect(doc).toContain(`| \`${k}\` |`);
  });
});
