/**
 * Browser test: hostile files on the page. After a stage of a shrunk arith-team (so the autosave
 * holds a real experiment), a checkpoint folder whose tokenizer.json has a catastrophic-
 * backtracking pre-tokenizer pattern is picked on agent 1's card, a folder whose chat template
 * loops 25 million times is picked after it, and a ~1 MB gzip bomb (1 GiB − 64 zeros) is imported
 * as an experiment file; then two more gzip bombs, a 100,000-deep config.json, a 10,000,000-entry
 * vocabulary, a safetensors header of 1,000,000 extra entries, a 37 MB recipe YAML, ONNX folders
 * whose graph has a cycle or If nested 10,000 deep, run logs of 1,000,000 keys on a line, one
 * 50 MB line or 200 MB, and recipes nested 100,000 deep or tagged !!js/function
 * (`otherClasses`).
 * Each is refused with its own message (the checks run in a budgeted Web
 * Worker, src/workers/budget.ts); throughout, no main-thread task takes LONGEST_TASK_MS, a heartbeat
 * on the main thread never misses 1 s and the page answers a round trip within 1 s; the team and the stage table are unchanged, and a
 * reload restores the autosave as it was. The time to each refusal and the longest task (with the scripts
 * Chromium blames for every long animation frame) are printed (docs/performance.md,
 * "Hostile inputs").
 *
 * Not here: the readers' own checks (tests/hostile*.test.ts).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { encodeShare, makeShareState } from '../../src/app/share';
import { hfCheckpoint, writeHfFolder } from '../helpers/hfCheckpoint';
import { bigVocabTokenizer, containerBomb, deepJson, extraEntriesFolder, gzipBomb, onnxCycle, onnxNestedIf, regexTokenizer, RUNAWAY_TEMPLATES } from '../helpers/hostile';
import { onnxFolder } from '../helpers/onnxFolder';
import { playgroundAndFolder, settled, TINY_ARITH_TEAM, type Playground } from './harness';

let pg: Playground;
let dir: string;
playgroundAndFolder('sat-hostile-e2e-', (p, d) => {
  pg = p;
  dir = d;
});

const rows = 'document.querySelectorAll(\'[data-testid="stage-row"]\').length';
const cfg = TINY_ARITH_TEAM;
/**
 * The longest main-thread task allowed while a hostile file is checked (Long Tasks API). The page's
 * own work per refusal is a React render of the banner and a layout; the bound leaves room for a
 * slow two-core machine with a software GPU shared with other jobs (docs/performance.md, "Hostile
 * inputs").
 */
const LONGEST_TASK_MS = 200;

/** Starts a main-thread heartbeat (every 50 ms); `maxGap` reads the longest gap between beats since. */
async function heartbeat(p: Page): Promise<{ maxGap: () => Promise<number> }> {
  await p.evaluate(() => {
    const w = window as unknown as { __gap: number; __last: number };
    w.__gap = 0;
    w.__last = performance.now();
    setInterval(() => {
      const t = performance.now();
      w.__gap = Math.max(w.__gap, t - w.__last);
      w.__last = t;
    }, 50);
  });
  return { maxGap: () => p.evaluate(() => (window as unknown as { __gap: number }).__gap) };
}

/** A main-thread task or animation frame over 50 ms, with the scripts Chromium blames for it (long-animation-frame entries). */
interface Long {
  readonly kind: 'longtask' | 'frame';
  readonly ms: number;
  readonly scripts: string;
}

/** Records long tasks and long animation frames on the page from now on; `take` returns those seen since the last take. */
async function longTasks(p: Page): Promise<{ take: () => Promise<Long[]> }> {
  await p.evaluate(() => {
    const w = window as unknown as { __long: Long[] };
    w.__long = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) w.__long.push({ kind: 'longtask', ms: e.duration, scripts: '' });
    }).observe({ type: 'longtask' });
    new PerformanceObserver((l) => {
      type Frame = { duration: number; scripts: { invoker: string; sourceURL: string; sourceFunctionName: string; duration: number }[] };
      for (const e of l.getEntries() as unknown as Frame[]) {
        const scripts = e.scripts.map((x) => `${x.invoker} ${x.sourceURL.split('/').pop()} ${x.sourceFunctionName} ${x.duration.toFixed(0)} ms`).join('; ');
        w.__long.push({ kind: 'frame', ms: e.duration, scripts });
      }
    }).observe({ type: 'long-animation-frame' });
  });
  return {
    take: () =>
      p.evaluate(() => {
        const w = window as unknown as { __long: Long[] };
        const out = w.__long;
        w.__long = [];
        return out;
      }),
  };
}

/** The longest task in `seen` (0 when none was over 50 ms), printed with every long one for `what`. */
function longest(what: string, seen: readonly Long[]): number {
  for (const e of seen) console.log(`[hostile e2e] ${what}: ${e.kind} ${e.ms.toFixed(0)} ms ${e.scripts}`);
  return Math.max(0, ...seen.filter((e) => e.kind === 'longtask').map((e) => e.ms));
}

/** Runs `act` and waits for an error banner containing `expected`, round-tripping to the page every 200 ms; returns the banner, the time to it and the slowest round trip. */
async function refused(p: Page, act: () => Promise<void>, expected: string): Promise<{ text: string; ms: number; slowest: number }> {
  const t0 = Date.now();
  await act();
  let slowest = 0;
  for (;;) {
    const t = Date.now();
    const shown = await p.evaluate(() => document.querySelector('[data-testid="error"]')?.textContent ?? '');
    slowest = Math.max(slowest, Date.now() - t);
    if (shown.includes(expected)) return { text: shown, ms: Date.now() - t0, slowest };
    if (Date.now() - t0 > 60_000) throw new Error(`no refusal within 60 s; the banner says ${JSON.stringify(shown)}; page errors: ${pg.errors.join(' | ')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * More hostile classes, each picked from disk and refused by name: two gzip bombs, a 100,000-deep
 * config.json, a 10,000,000-entry vocabulary, a safetensors header of 1,000,000 extra entries and a
 * 37 MB recipe YAML (refused by its size before its text is read). Prints each one's time to
 * refusal and longest main-thread task.
 */
async function otherClasses(p: Page): Promise<{ what: string; ms: number; task: number }[]> {
  const lt = await longTasks(p);
  const enc = (o: unknown) => new TextEncoder().encode(typeof o === 'string' ? o : JSON.stringify(o));
  writeFileSync(join(dir, 'bomb8.satexp'), gzipBomb(8 * 2 ** 30));
  writeFileSync(join(dir, 'container.satexp'), containerBomb(2 ** 30 / 8));
  writeHfFolder(join(dir, 'deep-llama'), new Map(hfCheckpoint().files).set('config.json', deepJson(100_000)));
  writeHfFolder(join(dir, 'vocab-llama'), new Map(hfCheckpoint().files).set('tokenizer.json', bigVocabTokenizer(10_000_000)));
  writeHfFolder(join(dir, 'entries-llama'), extraEntriesFolder(1_000_000));
  writeFileSync(join(dir, 'big.yaml'), enc('sat: {}\n' + Array.from({ length: 2_000_000 }, (_, i) => `key${String(i).padStart(11, '0')}: 1\n`).join('')));
  const onnxWith = (graph: Uint8Array) => new Map([...onnxFolder().files].filter(([n]) => n.endsWith('.json')).concat([['model.onnx', graph]]));
  writeHfFolder(join(dir, 'cycle-onnx'), onnxWith(onnxCycle()));
  writeHfFolder(join(dir, 'nested-onnx'), onnxWith(onnxNestedIf(10_000)));
  writeFileSync(join(dir, 'keys.jsonl'), enc(`{"step": 1, "data": {${Array.from({ length: 1_000_000 }, (_, i) => `"k${i}": 1`).join(', ')}}}\n`));
  writeFileSync(join(dir, 'line.jsonl'), enc(`{"step": 1, "data": {"a": "${'x'.repeat(50_000_000)}"}}\n`));
  writeFileSync(join(dir, 'big.log'), new Uint8Array(200 * 2 ** 20).fill(0x31));
  writeFileSync(join(dir, 'deep.yaml'), enc(`sat: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`));
  writeFileSync(join(dir, 'tag.yaml'), enc('sat: {}\nx: !!js/function "function () {}"\n'));
  const cases: [string, string, string][] = [
    ['gzip 8 GiB of zeros', 'import', 'bomb8.satexp'],
    ['gzip container, 1 GiB f64 blob', 'import', 'container.satexp'],
    ['config.json 100,000 deep', 'checkpoint-1-input', 'deep-llama'],
    ['10,000,000-entry vocabulary', 'checkpoint-1-input', 'vocab-llama'],
    ['safetensors, 1,000,000 extra entries', 'checkpoint-1-input', 'entries-llama'],
    ['recipe YAML, 2,000,000 keys', 'import', 'big.yaml'],
    ['ONNX folder, a graph cycle', 'checkpoint-1-input', 'cycle-onnx'],
    ['ONNX folder, If nested 10,000 deep', 'checkpoint-1-input', 'nested-onnx'],
    ['run log, 1,000,000 keys on one line', 'import', 'keys.jsonl'],
    ['run log, one 50 MB line', 'import', 'line.jsonl'],
    ['run log of 200 MB', 'import', 'big.log'],
    ['recipe YAML, flow 100,000 deep', 'import', 'deep.yaml'],
    ['recipe YAML, !!js/function', 'import', 'tag.yaml'],
  ];
  const out: { what: string; ms: number; task: number }[] = [];
  for (const [what, input, file] of cases) {
    const before = await p.evaluate(() => document.querySelector('[data-testid="error"]')?.textContent ?? '');
    const t0 = Date.now();
    await p.getByTestId(input).setInputFiles(join(dir, file));
    await p.waitForFunction((b) => { const t = document.querySelector('[data-testid="error"]')?.textContent ?? ''; return t !== '' && t !== b; }, before, { timeout: 60_000, polling: 100 });
    const ms = Date.now() - t0;
    const text = await p.evaluate(() => document.querySelector('[data-testid="error"]')?.textContent ?? '');
    await settled(p);
    const task = longest(what, await lt.take());
    console.log(`[hostile e2e] ${what}: refused in ${ms} ms, longest main-thread task ${task.toFixed(0)} ms: ${text.slice(0, 160)}`);
    out.push({ what, ms, task });
  }
  return out;
}

describe('hostile files on the page', () => {
  it('a runaway regex folder, a runaway template folder and a gzip bomb are refused while the page stays responsive; the autosave is intact', async () => {
    writeHfFolder(join(dir, 'regex-llama'), new Map(hfCheckpoint().files).set('tokenizer.json', new TextEncoder().encode(JSON.stringify(regexTokenizer('([\\s\\S]+)+Q')))));
    const template = RUNAWAY_TEMPLATES['nested loops under the range cap'];
    writeHfFolder(join(dir, 'template-llama'), new Map(hfCheckpoint().files).set('tokenizer_config.json', new TextEncoder().encode(JSON.stringify({ eos_token: '<|im_end|>', chat_template: template }))));
    const bomb = gzipBomb(2 ** 30 - 64);
    writeFileSync(join(dir, 'bomb.satexp'), bomb);

    const p = await pg.freshPage();
    await p.goto(pg.url + (await encodeShare(makeShareState(cfg, { preset: 'arith-team' }))), { waitUntil: 'load' });
    await p.getByText(/Opened a shared experiment/).waitFor({ timeout: 120_000 });
    await settled(p);
    await p.getByTestId('step-stage').click();
    await p.waitForFunction(`${rows} === 1`, undefined, { timeout: 120_000 });
    await settled(p);
    const row = await p.getByTestId('stage-row').first().innerText();
    const team = [await p.getByTestId('agent-0').innerText(), await p.getByTestId('agent-1').innerText()];

    const beat = await heartbeat(p);
    const lt = await longTasks(p);
    const regex = await refused(p, () => p.getByTestId('checkpoint-1-input').setInputFiles(join(dir, 'regex-llama')), 'tokenizer.json: the pattern "([\\\\s\\\\S]+)+Q" of pre_tokenizer.pretokenizers[0].pattern could take exponential time to match');
    await settled(p);
    const regexTask = longest('regex folder', await lt.take());
    const loops = await refused(p, () => p.getByTestId('checkpoint-1-input').setInputFiles(join(dir, 'template-llama')), '"chat_template" is stopped: it takes more than 50,000 evaluation steps');
    await settled(p);
    const loopsTask = longest('template folder', await lt.take());
    // Picked from disk, as a person picks it: a file handed over as bytes (setInputFiles with a buffer)
    // crosses the DevTools pipe, and the renderer's main thread spends most of a second receiving it.
    const gz = await refused(p, () => p.getByTestId('import').setInputFiles(join(dir, 'bomb.satexp')), 'bomb.satexp”: This experiment file cannot be opened: part of it decompresses to more than 32 times its size');
    expect(gz.text).toMatch(/the experiment on the page is unchanged\.|Your current experiment was not changed\./);
    await settled(p);
    const gzTask = longest('gzip bomb', await lt.take());
    // The other classes the page reads, timed (printed for docs/performance.md): each refused by name.
    const more = await otherClasses(p);
    const gap = await beat.maxGap();
    console.log(`[hostile e2e] time to refusal: regex folder ${regex.ms} ms, template folder ${loops.ms} ms, gzip bomb (${bomb.length} bytes) ${gz.ms} ms; slowest round trip ${Math.max(regex.slowest, loops.slowest, gz.slowest)} ms; longest main-thread gap ${gap.toFixed(0)} ms; longest main-thread task: regex folder ${regexTask.toFixed(0)} ms, template folder ${loopsTask.toFixed(0)} ms, gzip bomb ${gzTask.toFixed(0)} ms`);
    expect(Math.max(regex.slowest, loops.slowest, gz.slowest)).toBeLessThan(1000);
    expect(gap).toBeLessThan(1000);
    expect(Math.max(regexTask, loopsTask, gzTask, ...more.map((m) => m.task))).toBeLessThan(LONGEST_TASK_MS);

    // Nothing changed, and the autosave restores the experiment as it was.
    expect([await p.getByTestId('agent-0').innerText(), await p.getByTestId('agent-1').innerText()]).toEqual(team);
    expect(await p.evaluate(rows)).toBe(1);
    await p.goto(pg.url, { waitUntil: 'load' });
    await p.getByText(/Restored your last experiment/).waitFor({ timeout: 120_000 });
    await settled(p);
    expect(await p.evaluate(rows)).toBe(1);
    expect(await p.getByTestId('stage-row').first().innerText()).toBe(row);
    expect(pg.errors).toEqual([]);
    await p.context().close();
  }, 400_000);

  it('the check worker\'s entry is the job table alone: each job\'s code is a chunk of its own, loaded when it runs', () => {
    const assets = join(pg.distDir, 'assets');
    const entry = readdirSync(assets).filter((f) => /^input\.worker-[\w-]+\.js$/.test(f));
    expect(entry).toHaveLength(1);
    const text = readFileSync(join(assets, entry[0]!), 'utf8');
    // Holding every job's code (the tokenizers, the template engine, the ONNX and YAML readers) it was 381 kB.
    expect(text.length).toBeLessThan(20_000);
    const chunks = [...new Set([...text.matchAll(/import\(\s*[`'"]\.\/([\w.-]+\.js)[`'"]\s*\)/g)].map((m) => m[1]!))];
    for (const job of ['savefile', 'hfLoad', 'onnxSeat', 'runLog', 'recipe']) expect(chunks.filter((c) => c.startsWith(`${job}-`)), job).toHaveLength(1);
    for (const c of chunks) expect(existsSync(join(assets, c)), c).toBe(true);
  });
});
