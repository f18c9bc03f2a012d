/**
 * Docs stay true: the settings table in docs/method.md is exactly what the config table generates,
 * and every setting of CONFIG appears in it (run `npm run docs:settings` after changing a setting).
 *
 * Text cites what the reader has: no comment, UI string or doc under src/, docs/ or README.md
 * cites the design notes that are not in the repository (SAT.md, UX.md, ARCHITECTURE.md), and
 * every `docs/method.md §N` / `docs/certificate.md §N` citation (in src/, docs/, README.md and
 * tests/) names a section that exists — for method.md, one of its explicit `<a id="sN-M">` anchors.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { METHOD_DOC, withSettingsTable } from '../src/cli/settingsDoc';
import { CONFIG_KEYS } from '../src/sat/config';

const TEXT = /\.(ts|tsx|js|mjs|css|md|html|json|wgsl)$/;

/** Every text file under `dir`, recursively (paths relative to the repository root). */
function textFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...textFiles(path));
    else if (TEXT.test(name)) out.push(path);
  }
  return out;
}

/** `file:line: text` for every line of `files` that matches `re`. */
function hits(files: readonly string[], re: RegExp): string[] {
  const found: string[] = [];
  for (const f of files) {
    readFileSync(f, 'utf8').split('\n').forEach((line, i) => {
      if (re.test(line)) found.push(`${f}:${i + 1}: ${line.trim()}`);
    });
  }
  return found;
}

/** The section numbers a citation names: "§6.2–§6.4" → ["6.2", "6.4"], "§9b, §8.1" → ["9b", "8.1"]. */
function citedSections(text: string, doc: 'method' | 'certificate'): string[] {
  const re = new RegExp(String.raw`${doc}\.md\`?\]?\)?\s*((?:§\d+[a-z]?(?:\.\d+)*)(?:\s*(?:,|–|-|and)\s*§\d+[a-z]?(?:\.\d+)*)*)`, 'g');
  const out: string[] = [];
  for (const m of text.matchAll(re)) for (const s of m[1]!.split('§').slice(1)) out.push(s.replace(/[\s,–-]|and/g, '').replace(/\.$/, ''));
  return out;
}

const PUBLIC = [...textFiles('src'), ...textFiles('docs'), 'README.md'];
const CITING = [...PUBLIC, ...textFiles('tests')];
const method = readFileSync('docs/method.md', 'utf8');
const certificate = readFileSync('docs/certificate.md', 'utf8');
const methodAnchors = new Set([...method.matchAll(/<a id="([^"]+)"><\/a>/g)].map((m) => m[1]!));
const certSections = new Set([...certificate.matchAll(/^#{2,3} (\d+(?:\.\d+)?)\.? /gm)].map((m) => m[1]!));

describe('docs', () => {
  it('the settings table of docs/method.md matches CONFIG', () => {
    const doc = readFileSync(METHOD_DOC, 'utf8');
    expect(withSettingsTable(doc), 'stale: run npm run docs:settings').toBe(doc);
    for (const k of CONFIG_KEYS) expect(doc).toContain(`| \`${k}\` |`);
  });

  it('src/, docs/ and README.md never cite SAT.md, UX.md or ARCHITECTURE.md (files not in the repository)', () => {
    expect(PUBLIC.length).toBeGreaterThan(100);
    expect(hits(PUBLIC, /\b(SAT|UX|ARCHITECTURE)\.md\b/), 'cite docs/method.md or docs/certificate.md sections instead').toEqual([]);
  });

  it('every numbered heading of docs/method.md has its anchor: §N is #sN, §N.M is #sN-M', () => {
    const headings = [...method.matchAll(/^#{2,4} (.*)$/gm)].map((m) => m[1]!).filter((h) => /^(<a id="[^"]+"><\/a>)?\d/.test(h));
    expect(headings.length).toBeGreaterThan(30);
    for (const h of headings) {
      const m = /^<a id="([^"]+)"><\/a>(\d+[a-z]?(?:\.\d+)*)\.? /.exec(h);
      expect(m, `heading without an anchor: ${h}`).not.toBeNull();
      expect(m![1], h).toBe(`s${m![2]!.replace(/\./g, '-')}`);
    }
  });

  it('every citation of docs/method.md §… or docs/certificate.md §… names a section that exists', () => {
    const bad: string[] = [];
    let cited = 0;
    for (const f of CITING) {
      readFileSync(f, 'utf8').split('\n').forEach((line, i) => {
        cited += citedSections(line, 'method').length + citedSections(line, 'certificate').length;
        for (const s of citedSections(line, 'method')) if (!methodAnchors.has(`s${s.replace(/\./g, '-')}`)) bad.push(`${f}:${i + 1}: method.md §${s}`);
        for (const s of citedSections(line, 'certificate')) if (!certSections.has(s)) bad.push(`${f}:${i + 1}: certificate.md §${s}`);
      });
    }
    expect(cited).toBeGreaterThan(60);
    expect(citedSections('docs/method.md §6.2–§6.4 and docs/method.md §9b, §8.1.', 'method')).toEqual(['6.2', '6.4', '9b', '8.1']);
    expect(bad).toEqual([]);
  });

  it('the links to anchors of docs/method.md (in itself and from README.md) resolve', () => {
    const links = [
      ...[...method.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]!),
      ...[...readFileSync('README.md', 'utf8').matchAll(/\]\(docs\/method\.md#([^)]+)\)/g)].map((m) => m[1]!),
    ];
    expect(links.length).toBeGreaterThan(3);
    for (const id of links) expect(methodAnchors, `#${id}`).toContain(id);
  });
});
