/**
 * A real run's logs (src/bridge/runLog.ts and logs/): each fixture — written to the format of the
 * logger's code, tests/fixtures/bridge/logs/README.md — reads to the numbers it holds, in the
 * charts' rows (runLogSeries.ts); the same run through verl's file logger, console logger and a
 * W&B CSV gives the same series; partial and bad logs keep what can be read and say what was not;
 * oversized input is refused before parsing; a run saved to a file or a link reads back equal.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { FormatError } from '../src/core/errors';
import { detectFormat, packRunLog, readRunLog, runSteps } from '../src/bridge/runLog';
import { readRunLogFile, readRunLogParam, runLogParam, runLogText } from '../src/bridge/runLogFile';
import { engineLabel, runClip, runJ, runKl, runTimeline } from '../src/bridge/runLogSeries';
import { csvRows } from '../src/bridge/logs/wandb';
import { pyNumber } from '../src/bridge/logs/verl';
import { checkFileBytes, LOG_LIMITS } from '../src/bridge/limits';

const fixture = (f: string) => readFileSync(join(import.meta.dirname, 'fixtures/bridge/logs', f), 'utf8');
const rowsOf = <R>(c: { rows: readonly R[] } | { reason: string }): readonly R[] => {
  if (!('rows' in c)) throw new Error(`expected rows, got the reason: ${c.reason}`);
  return c.rows;
};

describe('verl\'s loggers and a W&B export of the same run', () => {
  const file = readRunLog(fixture('verl-file.jsonl'), 'verl-file.jsonl');
  const console_ = readRunLog(fixture('verl-console.log'), 'verl-console.log');
  const wandb = readRunLog(fixture('wandb-history.csv'), 'wandb-history.csv');

  it('are recognised, and read to the same steps and metrics', () => {
    expect([file.format, console_.format, wandb.format]).toEqual(['verl-jsonl', 'verl-console', 'wandb-csv']);
    for (const log of [file, console_, wandb]) {
      expect(log.engine).toBe('verl');
      expect(log.agents).toBe(0);
      expect([...log.steps]).toEqual([0, 1, 2, 3, 4]);
    }
    expect(runSteps(console_)).toEqual(runSteps(file));
    expect(runSteps(wandb)).toEqual(runSteps(file));
  });

  it('feed J, the KL, the clip fraction; the timeline says why it is empty', () => {
    expect(rowsOf(runJ(file)).map((r) => r.J)).toEqual([0.3125, 0.375, 0.4375, 0.5, 0.5625]);
    expect(rowsOf(runJ(file)).map((r) => r.train)).toEqual([undefined, 0.325, 0.3875, 0.45, 0.5125]);
    const kl = runKl(file);
    expect(rowsOf(kl).map((r) => r.kl[0])).toEqual([0.0004, 0.0008, 0.0012, 0.0016]);
    expect('rows' in kl && kl.violationRate).toEqual([null]);
    expect('rows' in kl && kl.what).toMatch(/verl has no trust-region monitor, so there is no δ/);
    expect(rowsOf(runClip(file)).map((r) => r.clip[0])).toEqual([0.01, 0.02, 0.03, 0.04]);
    const tl = runTimeline(file);
    expect('reason' in tl && tl.reason).toMatch(/One policy/);
  });

  it('a run killed mid-write keeps its complete lines and names the cut one', () => {
    expect(file.warnings).toEqual(['line 6: not JSON ({"step":5,"data":{"actor/pg_loss":-0.04).']);
  });
});

describe('the exported verl driver\'s team log (teamPy.ts team_log)', () => {
  // As team_log writes it: step 0 the held-out score, then per stage each run's metrics as agent<j>/…
  // in the order the agents were trained, then the held-out score after the stage.
  const teamLog = (order: readonly number[]) =>
    [
      { step: 0, data: { 'val-core/arithmetic/acc/mean@1': 0.1 } },
      ...[1, 2].map((stage) => ({
        step: stage,
        data: { ...Object.fromEntries(order.flatMap((a) => [[`agent${a}/actor/ppo_kl`, stage + a / 10], [`agent${a}/critic/score/mean`, 0.5]])), 'val-core/arithmetic/acc/mean@1': stage / 10 },
      })),
    ]
      .map((l) => JSON.stringify(l))
      .join('\n');

  it('is named for what it is, in any order of agents, and its timeline is that order', () => {
    for (const order of [[0, 1, 2], [2, 0, 1], [1, 2, 0], [2, 1, 0]]) {
      const log = readRunLog(teamLog(order), 'arith.verl-team-log.jsonl');
      expect([log.format, log.engine, log.agents], `order ${order}`).toEqual(['verl-jsonl', 'verlTeam', 3]);
      expect(engineLabel(log)).toBe('a verl team log from the exported driver');
      const tl = runTimeline(log);
      expect(rowsOf(tl).map((r) => [r.step, r.updates.map((u) => u.agent)]), `order ${order}`).toEqual([[1, order], [2, order]]);
      expect('note' in tl && tl.note).toMatch(/read from each step's keys/);
      // KL per agent by its id, whatever the order
      expect(rowsOf(runKl(log)).map((r) => r.kl)).toEqual([[1, 1.1, 1.2], [2, 2.1, 2.2]]);
      const kl = runKl(log);
      expect('what' in kl && kl.what).toMatch(/from each agent's own verl run\. verl has no trust-region monitor/);
      // saved and read back: the order travels with the run
      const back = readRunLogFile(runLogText(log));
      expect([back.engine, rowsOf(runTimeline(back)).map((r) => r.updates.map((u) => u.agent))]).toEqual(['verlTeam', [order, order]]);
    }
  });

  it('a log with a key outside agent<j>/ and val- (TeamTR\'s team-wide critic/score/mean) stays TeamTR\'s', () => {
    const text = teamLog([2, 0, 1]).replace('"val-core/arithmetic/acc/mean@1":0.2}', '"val-core/arithmetic/acc/mean@1":0.2,"critic/score/mean":0.4}');
    expect(text).toContain('critic/score/mean":0.4');
    const log = readRunLog(text, 'x.jsonl');
    expect([log.engine, engineLabel(log)]).toEqual(['teamtr', 'teamtr']);
  });
});

describe('TeamTR\'s per-agent metrics', () => {
  const log = readRunLog(fixture('teamtr-console.log'), 'teamtr-console.log');
  it('give each agent its KL and clip fraction, and the order of updates per step', () => {
    expect([log.engine, log.agents]).toEqual(['teamtr', 3]);
    expect(rowsOf(runJ(log)).map((r) => r.J)).toEqual([0.25, 0.3, 0.36, 0.41]);
    expect(rowsOf(runKl(log)).map((r) => r.kl)).toEqual([
      [0.0004, 0.0008, 0.0012],
      [0.0008, 0.0016, 0.0024],
      [0.0012, 0.0024, 0.0036],
    ]);
    expect(rowsOf(runClip(log))[2]!.clip).toEqual([0.03, 0.035, 0.04]);
    expect(rowsOf(runTimeline(log)).map((r) => r.updates.map((u) => u.agent))).toEqual([[0, 1, 2], [0, 1, 2], [0, 1, 2]]);
  });

  it('TeamTR\'s file logger (the same FileLogger as verl\'s, verl/utils/tracking.py in its copy) reads to the same steps', () => {
    // Each console line's metrics as the {"step": N, "data": {…}} line the file logger writes for that call.
    const jsonl = runSteps(log).map((st) => JSON.stringify({ step: st.step, data: st.metrics })).join('\n');
    const file = readRunLog(jsonl, 'arith.teamtr-log.jsonl');
    expect([file.format, file.engine, file.agents]).toEqual(['verl-jsonl', 'teamtr', 3]);
    expect(runSteps(file)).toEqual(runSteps(log));
    expect(rowsOf(runKl(file))).toEqual(rowsOf(runKl(log)));
  });
});

describe('the SAT authors\' trainer', () => {
  it('its printed log gives each stage\'s order, each agent\'s KL against δ, backtracks and violations', () => {
    const log = readRunLog(fixture('sat-trainer.log'), 'sat-trainer.log');
    expect([log.format, log.engine, log.agents]).toEqual(['sat-trainer', 'satTrainer', 3]);
    expect(rowsOf(runJ(log)).map((r) => r.lower)).toEqual([-12.3456, -13.0001]);
    const kl = runKl(log);
    expect(rowsOf(kl).map((r) => r.kl)).toEqual([
      [0.004567, 0.08, 0.03],
      [NaN, 0.05, 0.09],
    ]);
    expect('rows' in kl && [kl.deltas, kl.violationRate]).toEqual([[0.1, 0.1, 0.1], [0.5, 0, 0]]);
    expect(rowsOf(runTimeline(log))).toEqual([
      { step: 1, updates: [{ agent: 0, violated: false, backtracks: 0 }, { agent: 1, violated: false, backtracks: 1 }, { agent: 2, violated: false, backtracks: 0 }] },
      { step: 2, updates: [{ agent: 0, violated: true, backtracks: 2 }, { agent: 1, violated: false, backtracks: 0 }, { agent: 2, violated: false, backtracks: 1 }] },
    ]);
    expect('reason' in runClip(log)).toBe(true);
  });

  it('its stage_log.jsonl alone gives the certificate, and says the KL chart needs the printed log', () => {
    const log = readRunLog(fixture('sat-trainer.stage_log.jsonl'), 'stage_log.jsonl');
    expect(runSteps(log).map((s) => s.metrics.finite_sample_penalty)).toEqual([2.2456, 2.1001]);
    const kl = runKl(log);
    expect('reason' in kl && kl.reason).toMatch(/printed "\[Stage\] Updating agent …" lines/);
  });
});

describe('bad input', () => {
  it('names what it expected, keeps what it can, and refuses oversized files before parsing', () => {
    const err = (text: string, name = 'x.log') => {
      try {
        readRunLog(text, name);
      } catch (e) {
        return e as Error;
      }
      return null;
    };
    expect(err('hello\nworld')).toBeInstanceOf(FormatError);
    expect(err('hello\nworld')!.message).toMatch(/“x\.log” is not a run log the playground reads: expected verl's file logger/);
    expect(err('{"step": 1, "data": {}}\n{"step": "x", "data": {}}')).toBeNull();
    expect(err('{"step": x}')!.message).toMatch(/looks like .* but has no readable step|not a run log/);
    expect(err('_step,a\n,1\nfoo,2', 'h.csv')!.message).toMatch(/looks like wandb-csv but has no readable step\. First problem: row 2: no whole _step/);
    const partial = readRunLog('step:1 - a:0.5 - b:tensor(3.)\nstep:2 - a:0.25', 'c.log');
    expect(runSteps(partial)).toEqual([{ step: 1, metrics: { a: 0.5 } }, { step: 2, metrics: { a: 0.25 } }]);
    expect(partial.warnings).toEqual(['line 1: left out 1 value that is not a number.']);
    // A NaN: the console prints "nan", verl's file logger (orjson) writes null; both are said alike.
    const nanConsole = readRunLog('step:1 - a:nan - b:0.5 - c:inf', 'n.log');
    const nanFile = readRunLog('{"step":1,"data":{"a":null,"b":0.5,"c":null,"note":"text"}}', 'n.jsonl');
    expect(runSteps(nanFile)).toEqual(runSteps(nanConsole));
    expect(nanFile.warnings).toEqual(nanConsole.warnings);
    expect(nanFile.warnings).toEqual(['line 1: left out 2 values that are not numbers.']);
    const many = Array.from({ length: 30 }, () => 'not json').join('\n');
    const w = readRunLog(`{"step":1,"data":{"a":1}}\n${many}`, 'm.jsonl').warnings;
    expect(w).toHaveLength(21);
    expect(w[20]).toBe('… and 10 more skipped.');
    // Refused by their size before a line is parsed: JSON.parse is never called.
    const parse = vi.spyOn(JSON, 'parse');
    expect(err('x'.repeat(65 * 1024 * 1024))!.message).toMatch(/This run log is 65\.0 MB; the playground reads at most 64\.0 MB of it\. Nothing was read\./);
    expect(err('{"step":1,"data":{}}\n'.repeat(2_000_001))!.message).toMatch(/more than 2,000,000 lines/);
    expect(parse).not.toHaveBeenCalled();
    parse.mockRestore();
    // A file's bytes are held against the cap before it is read (UTF-8: at most 4 bytes a character).
    expect(() => checkFileBytes(4 * LOG_LIMITS.chars, LOG_LIMITS, 'run log')).not.toThrow();
    expect(() => checkFileBytes(4 * LOG_LIMITS.chars + 1, LOG_LIMITS, 'run log')).toThrow(/This run log is 256\.0 MB; the playground reads at most 64\.0 MB of it\. Nothing was read\./);
  });

  it('pprint and CSV details: NumPy reprs, booleans, quoted fields', () => {
    expect([pyNumber('np.float64(0.25)'), pyNumber('np.int64(3)'), pyNumber('True'), pyNumber('nan'), pyNumber('1e-05'), pyNumber('tensor(1.)')]).toEqual([0.25, 3, 1, null, 1e-5, null]);
    expect(csvRows('a,"b,c","d""e"\r\n1,2,3\n')).toEqual([['a', 'b,c', 'd"e'], ['1', '2', '3']]);
    expect(detectFormat('[{"_step": 0, "a": 1}]')).toBe('wandb-json');
    expect(runSteps(readRunLog('{"_step": 0, "a": 1}\n{"_step": 1, "a": 2, "_runtime": 3}', 'h.jsonl'))).toEqual([{ step: 0, metrics: { a: 1 } }, { step: 1, metrics: { a: 2 } }]);
  });
});

describe('an imported run is shared by file and by link', () => {
  it('reads back equal from both; a damaged link or file says so', () => {
    const log = readRunLog(fixture('teamtr-console.log'), 'teamtr-console.log');
    const back = readRunLogFile(runLogText(log));
    expect(back).toEqual(log);
    expect([back.engine, back.agents, back.keys]).toEqual([log.engine, log.agents, log.keys]);
    expect(readRunLog(runLogText(log), 'again.satrun.json')).toEqual(log);
    const p = runLogParam(log)!;
    expect(p.length).toBeLessThan(16_000);
    expect(readRunLogParam(p)).toEqual(log);
    expect(() => readRunLogParam(p.slice(0, 40))).toThrow(/This run link is damaged/);
    expect(() => readRunLogParam('a b')).toThrow(/not base64url/);
    expect(() => readRunLogFile('{"satRunLog": 1, "steps": [{"step": 1, "metrics": {"a": "x"}}]}')).toThrow(/metric a that is not a finite number/);
    const big = packRunLog(log, Array.from({ length: 4000 }, (_, i) => ({ step: i, metrics: { a: Math.sin(i) * 1e3, b: Math.cos(i * 7.1) } })));
    expect(runLogParam(big)).toBeNull();
  });
});
