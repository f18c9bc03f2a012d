/**
 * Hostile run logs against the bridge's readers (src/bridge/runLog.ts, logs/), one regression per
 * class: long digit runs where a number is expected (the SAT authors' printed log, verl's console
 * lines: read in linear time now that no number pattern has two runs that can split one digit
 * run), a line past the line cap, a step with too many metrics, too many distinct keys; and the
 * door's side: the runLog job reads a Blob and its time grows with
 * the file's size; the parsed run crosses back as columns (a Float64Array per key), transferred,
 * and a log whose steps × keys would pass the cells cap is refused before a column exists.
 * The importLog job (the page's Import) tells a dump from a run log on the worker's side.
 * Generation dumps: handed to the generations job unread (a Blob, a path), refused by their size,
 * their lines' keys (counted before JSON.parse), their rows (counted as non-blank lines before any
 * is parsed) and the characters of all the files.
 *
 * Not here: the formats themselves (tests/bridge-logs.test.ts), the worker thread
 * (tests/hostile-budget.test.ts), timing (bench/hostile.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { readRunLog, runSteps } from '../src/bridge/runLog';
import { FormatError } from '../src/core/errors';
import { CHECK_TIME_MS, GENERATION_MAX, LOG_LIMITS, RUN_LOG_MAX } from '../src/core/limits';
import { readGenerations } from '../src/bridge/generations';
import { PER_MIB_MS, timeFor } from '../src/workers/budget';
import { MessageChannel } from 'node:worker_threads';
import { replyTransfer, runJob } from '../src/workers/inputJobs';

function refusal(text: string): string {
  try {
    readRunLog(text, 'x.log');
  } catch (e) {
    expect(e).toBeInstanceOf(FormatError);
    return (e as Error).message;
  }
  throw new Error('accepted');
}

describe('hostile run logs', () => {
  const digits = '1'.repeat(300_000);

  it("a 300,000-digit run in the SAT authors' printed log is read in linear time (the stage kept, the line skipped)", () => {
    const log = readRunLog(`=== Stage 1/2 ===\n[Stage] Updating agent 0 (1/2)\nKL constraint met: ${digits} <= ${digits}x\nStage lower bound: ${digits}x\nCollected 8 episodes\n`, 'sat.log');
    expect(log.format).toBe('sat-trainer');
    expect(runSteps(log)).toEqual([{ step: 1, metrics: { episodes: 8 }, updates: [{ agent: 0, position: 0, klQ: NaN, delta: NaN, backtracks: 0, violated: false }] }]);
  });

  it("a 300,000-digit value in verl's console log is read in linear time and left out by name", () => {
    const log = readRunLog(`step:1 - a:${digits}x - b:0.5\nstep:2 - a:np.float64(${digits}x - b:0.25\n`, 'console.log');
    expect(runSteps(log).map((s) => s.metrics)).toEqual([{ b: 0.5 }, { b: 0.25 }]);
    expect(log.warnings).toEqual(['line 1: left out 1 value that is not a number.', 'line 2: left out 1 value that is not a number.']);
  });

  it('a line past the line cap is refused by its number before any parse', () => {
    const long = `{"step": 1, "data": {"a": "${'x'.repeat(LOG_LIMITS.lineChars)}"}}`;
    expect(refusal(`{"step": 0, "data": {"a": 1}}\n${long}\n`)).toBe('Line 2 of this run log is longer than 16,777,216 characters; the playground reads at most that many in one line. Nothing was read.');
  });

  it('a step with more metrics than the cap, or more distinct keys than the cap, is refused', () => {
    const wide = Object.fromEntries(Array.from({ length: RUN_LOG_MAX.keysPerStep + 1 }, (_, i) => [`k${i}`, i]));
    // counted on the line's text before JSON.parse builds the object
    expect(refusal(`{"step": 0, "data": {"a": 1}}\n${JSON.stringify({ step: 7, data: wide })}\n`)).toBe('Line 2 of this run log has more than 10,000 keys, the most one step may have (docs/models.md, "Input limits"). Nothing was read.');
    // a CSV's row is counted once parsed
    const header = ['_step', ...Object.keys(wide)].join(',');
    expect(refusal(`${header}\n7,${Object.values(wide).join(',')}\n`)).toBe('“x.log”: step 7 has more than 10,000 metrics, the most one step may have (docs/models.md, "Input limits"). Nothing was read.');
    const many = Array.from({ length: 11 }, (_, s) => JSON.stringify({ step: s, data: Object.fromEntries(Array.from({ length: 1_000 }, (_, i) => [`s${s}k${i}`, i])) })).join('\n');
    expect(refusal(many)).toBe('“x.log” has more than 10,000 distinct metric keys, the most a run log may have (docs/models.md, "Input limits"). Nothing was read.');
    const fine = Array.from({ length: 100 }, (_, s) => JSON.stringify({ step: s, data: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i])) })).join('\n');
    expect(readRunLog(fine, 'ok.jsonl').keys).toHaveLength(100);
  });

  it('the runLog job reads a Blob itself, and its time grows with the size (a legitimate 60 MB log gets 70 s)', async () => {
    const text = '{"step": 1, "data": {"a": 0.5}}\n{"step": 2, "data": {"a": 0.25}}\n';
    const r = await runJob('runLog', { source: new Blob([text]), name: 'blob.jsonl' });
    expect(r).toEqual({ ok: true, value: readRunLog(text, 'blob.jsonl') });
    const big = { source: { path: 'big.jsonl', size: 60 * 2 ** 20, dev: 0, ino: 0 }, name: '' };
    expect(timeFor({ timeMs: CHECK_TIME_MS, perMiBMs: PER_MIB_MS }, 'runLog', big)).toBe(70_000);
    const between = await runJob('runLog', { source: new Blob([new Uint8Array(LOG_LIMITS.chars + 1).fill(0x31)]), name: 'big.log' });
    expect(between).toMatchObject({ ok: false, errorClass: 'FormatError', message: 'This run log holds 67,108,865 characters; the playground reads at most 67,108,864 of it. Nothing was read.' });
    const over = await runJob('runLog', { source: { path: '/nonexistent', size: LOG_LIMITS.chars * 4 + 1, dev: 0, ino: 0 }, name: 'huge.log' });
    expect(over).toMatchObject({ ok: false, errorClass: 'FormatError', message: expect.stringMatching(/^This run log is 256\.0 MB; the playground reads at most 64\.0 MB of it/) });
  });

  it('the importLog job tells a generation dump from a run log in the worker (the page hands it the File unread), and a found log\'s columns are transferred', async () => {
    const dumpText = readFileSync(join(import.meta.dirname, 'fixtures/bridge/logs/verl-generations/3.jsonl'), 'utf8');
    const dump = await runJob('importLog', { source: new Blob([dumpText]), name: '3.jsonl' });
    expect(dump).toEqual({ ok: true, value: { kind: 'generations', dump: readGenerations([{ name: '3.jsonl', text: dumpText }]) } });
    const text = '{"step": 1, "data": {"a": 0.5}}\n{"step": 2, "data": {"a": 0.25}}\n';
    const reply = await runJob('importLog', { source: new Blob([text]), name: 'blob.jsonl' });
    expect(reply).toEqual({ ok: true, value: { kind: 'runLog', log: readRunLog(text, 'blob.jsonl') } });
    expect(replyTransfer(reply)).toHaveLength(3); // steps, updates, the one column
    // Refused by its size before a byte is read (the path does not exist).
    const over = await runJob('importLog', { source: { path: '/nonexistent', size: LOG_LIMITS.chars * 4 + 1, dev: 0, ino: 0 }, name: 'huge.log' });
    expect(over).toMatchObject({ ok: false, errorClass: 'FormatError', message: expect.stringMatching(/^This run log is 256\.0 MB; the playground reads at most 64\.0 MB of it/) });
    expect(timeFor({ timeMs: CHECK_TIME_MS, perMiBMs: PER_MIB_MS }, 'importLog', { source: { path: 'big.jsonl', size: 60 * 2 ** 20, dev: 0, ino: 0 }, name: '' })).toBe(70_000);
  });

  it('a parsed run crosses back as one Float64Array per key plus the steps, every buffer transferred, none copied', async () => {
    const text = Array.from({ length: 50 }, (_, s) => JSON.stringify({ step: s * 2, data: { a: s / 4, ...(s % 5 === 0 ? { 'val-core/x/acc/mean@1': s } : {}) } })).join('\n');
    const reply = await runJob('runLog', { source: new Blob([text]), name: 'cols.jsonl' });
    if (!reply.ok) throw new Error(reply.message);
    const log = reply.value;
    expect(log.keys).toEqual(['a', 'val-core/x/acc/mean@1']);
    expect(log.steps).toBeInstanceOf(Float64Array);
    expect([...log.steps]).toEqual(Array.from({ length: 50 }, (_, s) => s * 2));
    expect(log.columns.map((c) => c.constructor)).toEqual([Float64Array, Float64Array]);
    expect(log.columns[1]!.filter((v) => !Number.isNaN(v))).toEqual(Float64Array.of(0, 5, 10, 15, 20, 25, 30, 35, 40, 45));
    const buffers = replyTransfer(reply);
    expect(buffers).toHaveLength(4); // steps, updates, two columns
    // Through a real port with the transfer list: the sender's arrays are detached (moved, not copied).
    const { port1, port2 } = new MessageChannel();
    const got = new Promise<typeof reply>((res) => port2.once('message', res));
    port1.postMessage(reply, buffers);
    const back = await got;
    port1.close();
    port2.close();
    expect(log.steps.length).toBe(0);
    expect(log.columns[0]!.length).toBe(0);
    expect(back).toMatchObject({ ok: true, value: { keys: log.keys } });
    expect(back.ok && [...back.value.steps]).toEqual(Array.from({ length: 50 }, (_, s) => s * 2));
  });

  it('steps × keys past the cells cap are refused by their counts, before a column is allocated', () => {
    // 1,700 steps of 6 keys each, cycling through 9,900 distinct keys (under the keys cap): sparse, so the columns would be mostly empty.
    const steps = 1_700;
    const lines = Array.from({ length: steps }, (_, s) => JSON.stringify({ step: s, data: Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`k${(s * 6 + i) % 9_900}`, 1])) }));
    expect(steps * 9_900).toBeGreaterThan(RUN_LOG_MAX.cells);
    expect(refusal(lines.join('\n'))).toBe(`“x.log” has 1,700 steps × 9,900 metric keys, more than the ${RUN_LOG_MAX.cells.toLocaleString('en')} values a run log's charts may hold (docs/models.md, "Input limits"). Nothing was read.`);
    // the same keys over fewer steps fit
    expect(readRunLog(lines.slice(0, 1_650).join('\n'), 'ok.jsonl').columns).toHaveLength(9_900);
  });
});

describe('hostile generation dumps', () => {
  const row = (step: number, i: number) => JSON.stringify({ input: `<a${i % 3}> q${i}`, output: `${i}`, score: 1, step });

  it('the job reads each file itself (a Blob, a path) after refusing one over the size cap unread', async () => {
    const text = [row(1, 0), row(1, 1)].join('\n');
    const ok = await runJob('generations', [{ name: '1.jsonl', source: new Blob([text]) }]);
    expect(ok).toEqual({ ok: true, value: readGenerations([{ name: '1.jsonl', text }]) });
    const huge = await runJob('generations', [{ name: '9.jsonl', source: { path: '/nonexistent', size: LOG_LIMITS.chars * 4 + 1, dev: 0, ino: 0 } }]);
    expect(huge).toMatchObject({ ok: false, errorClass: 'FormatError', message: expect.stringMatching(/^This generation dump is 256\.0 MB; the playground reads at most 64\.0 MB of it\. Nothing was read\.$/) });
    // many files each under the cap, together over it: refused by their sizes before any is read
    const many = Array.from({ length: 5 }, (_, k) => ({ name: `${k}.jsonl`, source: { path: '/nonexistent', size: 60 * 2 ** 20, dev: 0, ino: 0 } }));
    expect(await runJob('generations', many)).toMatchObject({ ok: false, errorClass: 'FormatError', message: expect.stringMatching(/^This import of 5 generation dump files is 300\.0 MB; the playground reads at most 64\.0 MB of it/) });
    const between = await runJob('generations', [{ name: 'b.jsonl', source: new Blob([new Uint8Array(LOG_LIMITS.chars + 1).fill(0x31)]) }]);
    expect(between).toMatchObject({ ok: false, message: 'This generation dump holds 67,108,865 characters; the playground reads at most 67,108,864 of it. Nothing was read.' });
  });

  it('a line with more keys than a row may have is refused by its number before JSON.parse', () => {
    const wide = JSON.stringify({ input: 'q', output: 'a', step: 1, ...Object.fromEntries(Array.from({ length: GENERATION_MAX.keysPerRow }, (_, i) => [`k${i}`, i])) });
    const parse = vi.spyOn(JSON, 'parse');
    expect(() => readGenerations([{ name: '1.jsonl', text: `${wide}\n` }])).toThrow('1.jsonl line 1 has more than 1,000 keys, the most one generation row may have (docs/models.md, "Input limits"). Nothing was read.');
    expect(parse).not.toHaveBeenCalled();
    parse.mockRestore();
  });

  it('more rows than one import may have are refused by their lines before any is parsed; files whose characters together pass the cap are refused', () => {
    const text = Array.from({ length: GENERATION_MAX.rows + 1 }, (_, i) => row(i % 7, i)).join('\n');
    const parse = vi.spyOn(JSON, 'parse');
    expect(() => readGenerations([{ name: 'r.jsonl', text }])).toThrow(`“r.jsonl” holds 500,001 non-blank lines, more than the 500,000 generation rows one import may have (import fewer steps' files) (docs/models.md, "Input limits"). Nothing was read.`);
    // over two files, blank and whitespace-only lines not counted
    const half = Array.from({ length: GENERATION_MAX.rows / 2 }, (_, i) => row(1, i)).join('\n \t\n\n');
    expect(() => readGenerations([{ name: '1.jsonl', text: half }, { name: '2.jsonl', text: `${half}\n${row(2, 0)}\n` }])).toThrow(/^“1\.jsonl, 2\.jsonl” hold 500,001 non-blank lines, more than the 500,000/);
    expect(parse).not.toHaveBeenCalled();
    parse.mockRestore();
    const part = 'x'.repeat(GENERATION_MAX.chars / 2);
    expect(() => readGenerations([{ name: 'a', text: part }, { name: 'b', text: `${part}y` }])).toThrow(/^These 2 generation dump files hold 67,108,865 characters together; the playground reads at most 67,108,864 in one import/);
    expect(readGenerations([{ name: 'ok.jsonl', text: text.slice(0, text.indexOf('\n', 100_000)) }]).rows.length).toBeGreaterThan(100);
  });
});
