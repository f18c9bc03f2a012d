/**
 * Tests for the typed config table and its parser (src/sat/config.ts).
 *
 * Checks every error path of `parseConfig` / `coerceValue` / `checkConsistency` — unknown keys
 * (with a "did you mean" suggestion), wrong types, out-of-range values, over-long lists and bad
 * list entries, and settings that contradict each other — asserting for each the error class
 * (ConfigError), its `.key`, and that the message names the key, the offending value and what
 * is allowed. Also: the defaults parse cleanly, string coercion from a CLI/URL, `parseAssignment`,
 * `diffConfig` round-trips through `parseConfig` (random consistent configs, Rng seed 4242),
 * every field of the table is documented with a default inside its range, the task options equal
 * the task registry, every config the parser accepts builds a game, and `Config` is the type the
 * table's schemas output (literal choices kept; checked by `npm run typecheck`).
 *
 * Expected values (messages' ranges, coerced numbers) are written out by hand from the table in
 * docs/method.md §11 / config.ts, not read back from the code under test.
 */

import * as v from 'valibot';
import { agentBackend } from '../src/workers/remoteTeam';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { ConfigError } from '../src/core/errors';
import { Rng } from '../src/core/rng';
import {
  CONFIG,
  CONFIG_KEYS,
  CONFIG_SCHEMA,
  type Config,
  type ConfigKey,
  type Field,
  agentDelta,
  checkConsistency,
  coerceValue,
  defaultConfig,
  diffConfig,
  parseAssignment,
  parseConfig,
  isLlmTask,
  resolvedProtocol,
  SettingTypeError,
} from '../src/sat/config';
import { TASK_NAMES, TASKS, makeGame, type TaskName } from '../src/tasks/index';
import { LLM_TASK_NAMES, LLM_TASKS, type LlmTaskName } from '../src/tasks/llm/index';

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/** Runs `fn`, expects a ConfigError, and returns it (fails the test if anything else happens). */
function configError(fn: () => unknown): ConfigError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught, 'expected a ConfigError to be thrown').toBeInstanceOf(ConfigError);
  return caught as ConfigError;
}

/** Expects `fn` to throw a ConfigError with `.key === key` whose message contains every part. */
function expectConfigError(fn: () => unknown, key: string, parts: readonly string[]): ConfigError {
  const e = configError(fn);
  expect(e.key).toBe(key);
  expect(e.code).toBe('config');
  expect(e.name).toBe('ConfigError');
  for (const p of parts) expect(e.message, `message should contain ${JSON.stringify(p)}`).toContain(p);
  return e;
}

// ---------------------------------------------------------------------------------------------
// Defaults and the table itself
// ---------------------------------------------------------------------------------------------

describe('Config is what the table\'s schemas output', () => {
  it('keeps choices as literal unions and numbers, booleans and lists as such (a type check: npm run typecheck fails otherwise)', () => {
    expectTypeOf<Config['task']>().toEqualTypeOf<TaskName | LlmTaskName>();
    expectTypeOf<Config['protocol']>().toEqualTypeOf<'auto' | 'independent' | 'chain' | 'vote' | 'router'>();
    expectTypeOf<Config['model']>().toEqualTypeOf<'S' | 'M' | 'L'>();
    expectTypeOf<Config['agents']>().toEqualTypeOf<number>();
    expectTypeOf<Config['lr']>().toEqualTypeOf<number>();
    expectTypeOf<Config['betaAdapt']>().toEqualTypeOf<boolean>();
    expectTypeOf<Config['deltas']>().toEqualTypeOf<number[]>();
    expectTypeOf<Config['agentModels']>().toEqualTypeOf<string[]>();
    expectTypeOf<keyof Config>().toEqualTypeOf<ConfigKey>();
    // No setting's type is any or unknown (a schema whose output the checker cannot see).
    type Loose = { [K in ConfigKey]: 0 extends 1 & Config[K] ? K : unknown extends Config[K] ? K : never }[ConfigKey];
    expectTypeOf<Loose>().toEqualTypeOf<never>();
  });

  it('the whole-config schema reads every setting by its row: defaults unchanged, text coerced, a bad value refused', () => {
    expect(v.parse(CONFIG_SCHEMA, defaultConfig())).toEqual(defaultConfig());
    const read = v.parse(CONFIG_SCHEMA, { ...defaultConfig(), lr: '0.5', deltas: '0.1, 0.2', betaAdapt: 'false', agentModels: 'S,M' });
    expect([read.lr, read.deltas, read.betaAdapt, read.agentModels]).toEqual([0.5, [0.1, 0.2], false, ['S', 'M']]);
    expect(v.safeParse(CONFIG_SCHEMA, { ...defaultConfig(), protocol: 'relay' }).success).toBe(false);
    expect(v.safeParse(CONFIG_SCHEMA, { ...defaultConfig(), customOrder: [0, 9] }).success).toBe(false);
  });
});

describe('the CONFIG table', () => {
  it('parses the defaults cleanly: parseConfig({}) is the default config', () => {
    const c = parseConfig({});
    expect(c).toEqual(defaultConfig());
    expect(() => checkConsistency(defaultConfig())).not.toThrow();
    // A few defaults the method fixes (docs/method.md §4–§6).
    expect(c.aClip).toBe(5);
    expect(c.epsLow).toBe(0.2);
    expect(c.epsHigh).toBe(0.2);
    expect(c.alpha).toBe(0.05);
    expect(c.maxBacktracks).toBe(5);
    expect(c.onExhausted).toBe('reject');
    expect(c.norm).toBe('group');
  });

  it('defaultConfig returns fresh copies of the list defaults', () => {
    const a = defaultConfig();
    a.deltas.push(0.5);
    a.customOrder.push(1);
    const b = defaultConfig();
    expect(b.deltas).toEqual([]);
    expect(b.customOrder).toEqual([]);
  });

  it('every field has a non-empty doc and a default inside its range', () => {
    expect(CONFIG_KEYS.length).toBeGreaterThan(30);
    const groups = new Set(['task', 'model', 'run', 'advantage', 'objective', 'trust', 'order', 'certificate', 'swap']);
    for (const key of CONFIG_KEYS) {
      const f: Field = CONFIG[key];
      expect(f.doc.trim().length, `${key}.doc`).toBeGreaterThan(10);
      expect(groups.has(f.group), `${key}.group`).toBe(true);
      switch (f.type) {
        case 'int':
          expect(Number.isInteger(f.default), `${key} default is an integer`).toBe(true);
          expect(Number.isInteger(f.min) && Number.isInteger(f.max), `${key} bounds are integers`).toBe(true);
          expect(f.min <= f.default && f.default <= f.max, `${key} default in range`).toBe(true);
          break;
        case 'float':
          expect(Number.isFinite(f.default), `${key} default finite`).toBe(true);
          expect(f.min < f.max, `${key} min < max`).toBe(true);
          expect(f.min <= f.default && f.default <= f.max, `${key} default in range`).toBe(true);
          break;
        case 'bool':
          expect(typeof f.default).toBe('boolean');
          break;
        case 'enum':
          expect(f.options.length, `${key} options`).toBeGreaterThan(1);
          expect(new Set(f.options).size, `${key} options distinct`).toBe(f.options.length);
          expect(f.options, `${key} default is an option`).toContain(f.default);
          break;
        case 'intList':
        case 'floatList':
          expect(f.default.length <= f.maxLength, `${key} default length`).toBe(true);
          for (const v of f.default) expect(f.min <= v && v <= f.max, `${key} default entry in range`).toBe(true);
          break;
      }
      // The default also survives the parser, both typed and as a CLI string.
      const d = f.default;
      expect(coerceValue(key, d), `${key}: typed default`).toEqual(d);
      const asString = Array.isArray(d) ? d.join(',') : String(d);
      expect(coerceValue(key, asString), `${key}: default as a string`).toEqual(d);
    }
  });

  it('the task options equal the tabular and language task registries\' names', () => {
    const names = [...TASK_NAMES, ...LLM_TASK_NAMES];
    expect([...CONFIG.task.options].sort()).toEqual([...names].sort());
    expect(CONFIG.task.options.length).toBe(names.length);
    for (const t of CONFIG.task.options) expect(isLlmTask(t)).toBe((LLM_TASK_NAMES as readonly string[]).includes(t));
  });

  it("the protocol options are 'auto' plus exactly the protocols some task offers", () => {
    const offered = new Set(TASK_NAMES.flatMap((t) => TASKS[t].protocols));
    expect([...CONFIG.protocol.options].sort()).toEqual(['auto', ...offered].sort());
  });
});

// ---------------------------------------------------------------------------------------------
// Unknown keys
// ---------------------------------------------------------------------------------------------

describe('unknown keys', () => {
  it.each([
    ['detla', 'delta'], // a transposition: one slip of the fingers
    ['detlas', 'deltas'],
    ['epoch', 'epochs'],
    ['agnets', 'agents'],
    ['tokenagg', 'tokenAgg'],
    ['betta', 'beta'],
    ['estimater', 'estimator'],
  ])('"%s" is rejected with the suggestion "%s"', (typo, suggestion) => {
    const e = expectConfigError(() => parseConfig({ [typo]: '0.1' }), typo, [`"${typo}"`, `Did you mean "${suggestion}"?`]);
    // The message lists what is allowed: every known setting.
    for (const k of CONFIG_KEYS) expect(e.message).toContain(k);
  });

  it('a key far from every setting gets no suggestion but still the list of settings', () => {
    const e = expectConfigError(() => parseConfig({ zzzzzzzzzzzz: 1 }), 'zzzzzzzzzzzz', ['"zzzzzzzzzzzz"', 'Known settings:', 'stage0Delta']);
    expect(e.message).not.toContain('Did you mean');
  });

  it("object-prototype names are not settings (no 'toString', '__proto__' or 'constructor')", () => {
    for (const k of ['toString', 'constructor', 'hasOwnProperty', '__proto__']) {
      const input = JSON.parse(`{"${k}": "1"}`) as Record<string, unknown>;
      expectConfigError(() => parseConfig(input), k, [`"${k}"`]);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Wrong types and out-of-range values
// ---------------------------------------------------------------------------------------------

describe('wrong types', () => {
  it.each<[ConfigKey, unknown, string[]]>([
    // int
    ['agents', 'abc', ['"abc"', 'is not a number', 'an integer in [1, 6]']],
    ['agents', '1.5', ['"1.5"', 'is not an integer', 'an integer in [1, 6]']],
    ['agents', 3.5, ['3.5', 'is not an integer', 'an integer in [1, 6]']],
    ['agents', '', ['""', 'an integer in [1, 6]']],
    ['agents', '0x3', ['"0x3"', 'an integer in [1, 6]']],
    ['agents', true, ['true', 'an integer in [1, 6]']],
    ['stages', '3 stages', ['"3 stages"', 'an integer in [1, 10000]']],
    ['epochs', '2.0001', ['"2.0001"', 'an integer in [1, 100]']],
    // float
    ['lr', 'abc', ['"abc"', 'is not a number', 'a number in [1e-5, 10]']],
    ['lr', '1e', ['"1e"', 'a number in [1e-5, 10]']],
    ['epsLow', '0.2.1', ['"0.2.1"', 'a number in [0.001, 0.99]']],
    ['beta', null, ['null', 'a number in [0, 10000]']],
    // bool
    ['betaAdapt', 'yes', ['"yes"', 'is not a boolean', 'true or false']],
    ['betaAdapt', 2, ['2', 'true or false']],
    ['betaAdapt', '', ['""', 'true or false']],
    // enum
    ['task', 'climb', ['"climb"', 'is not an allowed choice', 'one of climbing, penalty, random-matrix, relay, router, guess']],
    ['estimator', 'truncated_is', ['"truncated_is"', 'one of resample, truncated-is, happo, naive']],
    ['norm', 3, ['3', 'one of group, batch, none']],
    ['onExhausted', 'Reject', ['"Reject"', 'one of reject, keep, shrink']],
    // list
    ['customOrder', 'a,b', ['"a,b"', 'a comma-separated list of at most 6 integers in [0, 5]']],
    ['customOrder', '1.5', ['"1.5"', '"1.5"', 'integers in [0, 5]']],
    ['customOrder', '0,,1', ['"0,,1"', 'integers in [0, 5]']],
    ['deltas', 'x', ['"x"', 'a comma-separated list of at most 6 numbers in [1e-6, 10]']],
    ['deltas', 0.1, ['0.1', 'is not a list', 'numbers in [1e-6, 10]']],
  ])('%s = %j is rejected', (key, raw, parts) => {
    expectConfigError(() => parseConfig({ [key]: raw }), key, [`"${key}"`, ...parts]);
    // coerceValue alone fails the same way.
    expectConfigError(() => coerceValue(key, raw), key, [`"${key}"`]);
    const e = configError(() => parseConfig({ [key]: raw }));
    expect(e.value).toBe(raw);
  });
});

describe('out of range', () => {
  it.each<[ConfigKey, unknown, string[]]>([
    ['agents', '0', ['"0"', 'is out of range', 'an integer in [1, 6]']],
    ['agents', '7', ['"7"', 'is out of range', 'an integer in [1, 6]']],
    ['agents', -3, ['-3', 'an integer in [1, 6]']],
    ['actions', '9', ['"9"', 'an integer in [2, 8]']],
    ['group', '1', ['"1"', 'an integer in [2, 256]']],
    ['seed', '4294967296', ['"4294967296"', 'an integer in [0, 4294967295]']],
    ['seed', '-1', ['"-1"', 'an integer in [0, 4294967295]']],
    ['maxBacktracks', '21', ['"21"', 'an integer in [0, 20]']],
    ['lr', '0', ['"0"', 'is out of range', 'a number in [1e-5, 10]']],
    ['lr', '10.5', ['"10.5"', 'a number in [1e-5, 10]']],
    ['epsLow', '1', ['"1"', 'a number in [0.001, 0.99]']],
    ['beta', '-1e-9', ['"-1e-9"', 'a number in [0, 10000]']],
    ['alpha', 0.51, ['0.51', 'a number in [0, 0.5]']],
    ['gamma', '1', ['"1"', 'a number in [0, 0.9999]']],
    ['penaltyK', '1', ['"1"', 'a number in [-100, 0]']],
    ['aClip', '0.05', ['"0.05"', 'a number in [0.1, 100]']],
    // Not finite, in every spelling a command line or a program could produce.
    ['lr', 'NaN', ['"NaN"', 'a number in [1e-5, 10]']],
    ['lr', 'Infinity', ['"Infinity"', 'a number in [1e-5, 10]']],
    ['beta', '-Infinity', ['"-Infinity"', 'a number in [0, 10000]']],
    ['beta', '1e400', ['"1e400"', 'is not finite', 'a number in [0, 10000]']],
    ['lr', Number.NaN, ['NaN', 'is not finite', 'a number in [1e-5, 10]']],
    ['delta', Number.POSITIVE_INFINITY, ['Infinity', 'is not finite', 'a number in [1e-6, 10]']],
    ['stages', Number.NaN, ['NaN', 'an integer in [1, 10000]']],
  ])('%s = %j is rejected', (key, raw, parts) => {
    expectConfigError(() => parseConfig({ [key]: raw }), key, [`"${key}"`, ...parts]);
  });

  it('accepts both ends of a range and rejects one step beyond', () => {
    expect(parseConfig({ agents: '2' }).agents).toBe(2);
    expect(parseConfig({ agents: '6' }).agents).toBe(6);
    expect(parseConfig({ lr: '1e-5' }).lr).toBe(0.00001);
    expect(parseConfig({ lr: '10' }).lr).toBe(10);
    expect(parseConfig({ beta: '0' }).beta).toBe(0);
    expect(parseConfig({ seed: '4294967295' }).seed).toBe(4294967295);
    expectConfigError(() => parseConfig({ lr: '0.0000099' }), 'lr', ['"0.0000099"', '[1e-5, 10]']);
  });
});

describe('lists', () => {
  it('a list longer than maxLength is rejected, naming its length and the limit', () => {
    expectConfigError(() => parseConfig({ deltas: '0.1,0.1,0.1,0.1,0.1,0.1,0.1' }), 'deltas', [
      '"deltas"',
      '"0.1,0.1,0.1,0.1,0.1,0.1,0.1"',
      'has 7 entries',
      'a comma-separated list of at most 6 numbers in [1e-6, 10]',
    ]);
    expectConfigError(() => parseConfig({ customOrder: [0, 1, 2, 3, 4, 5, 0] }), 'customOrder', ['has 7 entries', 'at most 6 integers']);
  });

  it('an entry out of range is rejected and named', () => {
    expectConfigError(() => parseConfig({ deltas: '0.1,0,0.1' }), 'deltas', ['"0.1,0,0.1"', 'has an entry "0" that is not allowed', '[1e-6, 10]']);
    expectConfigError(() => parseConfig({ deltas: '0.1,11,0.1' }), 'deltas', ['has an entry "11"', '[1e-6, 10]']);
    expectConfigError(() => parseConfig({ deltas: '0.1,NaN,0.1' }), 'deltas', ['"0.1,NaN,0.1"', '[1e-6, 10]']);
    expectConfigError(() => parseConfig({ deltas: [0.1, Infinity, 0.1] }), 'deltas', ['has an entry Infinity']);
    expectConfigError(() => parseConfig({ customOrder: '0,1,6' }), 'customOrder', ['"0,1,6"', 'has an entry "6"', 'integers in [0, 5]']);
    expectConfigError(() => parseConfig({ customOrder: '0,-1,2' }), 'customOrder', ['has an entry "-1"']);
  });

  it('an empty string is the empty list', () => {
    const c = parseConfig({ deltas: '0.1,0.2,0.3' });
    expect(parseConfig({ deltas: '' }, c).deltas).toEqual([]);
    expect(parseConfig({ deltas: '   ' }, c).deltas).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Inconsistent settings
// ---------------------------------------------------------------------------------------------

describe('inconsistent settings', () => {
  it('order=custom needs a permutation of 0..n−1: duplicates, wrong length, out of range, empty', () => {
    const bad: [string, string][] = [
      ['0,0,1', '[0, 0, 1]'], // duplicate
      ['0,1', '[0, 1]'], // too short
      ['0,1,2,0', '[0, 1, 2, 0]'], // too long
      ['0,1,3', '[0, 1, 3]'], // names agent 3 in a team of 3
      ['', '[]'], // missing
    ];
    for (const [order, shown] of bad) {
      const e = expectConfigError(() => parseConfig({ order: 'custom', customOrder: order }), 'customOrder', [
        '"customOrder"',
        shown,
        'not a permutation of 0..2',
      ]);
      expect(e.value).toEqual(order === '' ? [] : order.split(',').map(Number));
    }
    // With four agents the range in the message follows the team size.
    expectConfigError(() => parseConfig({ agents: 4, order: 'custom', customOrder: '3,2,1,1' }), 'customOrder', ['[3, 2, 1, 1]', '0..3']);
  });

  it('a valid custom order parses, in the order given', () => {
    expect(parseConfig({ order: 'custom', customOrder: '2,0,1' }).customOrder).toEqual([2, 0, 1]);
    expect(parseConfig({ agents: '5', order: 'custom', customOrder: '4,3,0,2,1' }).customOrder).toEqual([4, 3, 0, 2, 1]);
  });

  it('a non-custom order with a customOrder naming an agent outside the team is rejected', () => {
    expectConfigError(() => parseConfig({ customOrder: '0,4' }), 'customOrder', ['[0, 4]', 'names an agent ≥ 3', '0..2']);
    // …but a leftover order within the team is tolerated (it is ignored unless order = custom).
    expect(parseConfig({ customOrder: '1,0' }).customOrder).toEqual([1, 0]);
  });

  it('deltas must have one entry per agent (or none)', () => {
    expectConfigError(() => parseConfig({ deltas: '0.1,0.2' }), 'deltas', ['"deltas"', '[0.1, 0.2]', 'has 2 entries', '3 agents']);
    expectConfigError(() => parseConfig({ agents: 2, deltas: '0.1,0.2,0.3' }), 'deltas', ['[0.1, 0.2, 0.3]', '2 agents']);
    // Changing the team size on top of a base that had per-agent radii is caught too.
    const base = parseConfig({ deltas: '0.1,0.2,0.3' });
    expectConfigError(() => parseConfig({ agents: '4' }, base), 'deltas', ['has 3 entries', '4 agents']);
  });

  it('a protocol the task does not offer is rejected, naming the allowed ones', () => {
    expectConfigError(() => parseConfig({ task: 'climbing', protocol: 'chain' }), 'protocol', ['"protocol"', '"chain"', '"climbing"', 'allowed: auto, vote']);
    expectConfigError(() => parseConfig({ task: 'relay', protocol: 'vote' }), 'protocol', ['"vote"', '"relay"', 'allowed: auto, chain']);
    expectConfigError(() => parseConfig({ task: 'router', protocol: 'independent' }), 'protocol', ['"independent"', 'allowed: auto, router']);
    // Every (task, protocol) pair: accepted exactly when the registry lists it (or it is auto).
    for (const task of TASK_NAMES) {
      for (const protocol of CONFIG.protocol.options) {
        const ok = protocol === 'auto' || (TASKS[task].protocols as readonly string[]).includes(protocol);
        const input = { task, protocol, actions: TASKS[task].fixedActions ?? 3 };
        if (ok) expect(() => parseConfig(input), `${task}/${protocol}`).not.toThrow();
        else expectConfigError(() => parseConfig(input), 'protocol', [`"${protocol}"`, `"${task}"`]);
      }
    }
    // The guess task offers all four (docs/method.md §2.2).
    for (const p of ['independent', 'chain', 'vote', 'router']) expect(parseConfig({ task: 'guess', protocol: p }).protocol).toBe(p);
  });

  it('climbing and penalty need exactly 3 actions', () => {
    expectConfigError(() => parseConfig({ task: 'climbing', actions: '4' }), 'actions', ['"actions"', '4', '"climbing"', 'exactly 3 actions']);
    expectConfigError(() => parseConfig({ task: 'penalty', actions: 2 }), 'actions', ['2', '"penalty"', 'exactly 3 actions']);
    const e = configError(() => parseConfig({ task: 'penalty', actions: 2 }));
    expect(e.value).toBe(2);
    // Switching to climbing from a base with 5 actions fails too; other tasks take any m.
    const base = parseConfig({ task: 'guess', actions: 5 });
    expectConfigError(() => parseConfig({ task: 'climbing' }, base), 'actions', ['5', 'exactly 3']);
    expect(parseConfig({ task: 'random-matrix', actions: 5 }).actions).toBe(5);
  });

  it('the largest relay the ranges allow (6 agents, 8 actions → 8⁵ = 32768 states for the last agent) is accepted', () => {
    expect(parseConfig({ task: 'relay', agents: 6, actions: 8 }).agents).toBe(6);
  });
});

// ---------------------------------------------------------------------------------------------
// Coercion, parseAssignment, helpers
// ---------------------------------------------------------------------------------------------

describe('string coercion (CLI and URL input)', () => {
  it('numbers, booleans and lists come from strings', () => {
    const c = parseConfig({
      lr: '0.05',
      delta: '1e-3',
      beta: '+2.5E+1',
      epsHigh: '.28',
      agents: ' 4 ',
      seed: '123',
      betaAdapt: 'false',
      order: 'custom',
      customOrder: '2,0,1,3',
      deltas: ' 0.01, 0.02 ,0.03,1e-2',
      task: 'guess',
      protocol: 'chain',
    });
    expect(c.lr).toBe(0.05);
    expect(c.delta).toBe(0.001);
    expect(c.beta).toBe(25);
    expect(c.epsHigh).toBe(0.28);
    expect(c.agents).toBe(4);
    expect(c.seed).toBe(123);
    expect(c.betaAdapt).toBe(false);
    expect(c.customOrder).toEqual([2, 0, 1, 3]);
    expect(c.deltas).toEqual([0.01, 0.02, 0.03, 0.01]);
    expect(c.protocol).toBe('chain');
  });

  it("booleans: 'true'/'1' and 'false'/'0' and typed booleans", () => {
    expect(coerceValue('betaAdapt', 'true')).toBe(true);
    expect(coerceValue('betaAdapt', '1')).toBe(true);
    expect(coerceValue('betaAdapt', true)).toBe(true);
    expect(coerceValue('betaAdapt', 'false')).toBe(false);
    expect(coerceValue('betaAdapt', '0')).toBe(false);
    expect(coerceValue('betaAdapt', false)).toBe(false);
  });

  it('typed reads (links) take each setting\'s JSON type only, derived from its row; loose reads take its text', () => {
    for (const key of CONFIG_KEYS) {
      const d = CONFIG[key].default;
      expect(coerceValue(key, d, 'typed'), key).toEqual(d);
      const text = Array.isArray(d) ? d.join(',') : String(d);
      if (CONFIG[key].type === 'enum') continue; // an enum's text is its typed value
      const e = configError(() => coerceValue(key, text, 'typed'));
      expect(e, key).toBeInstanceOf(SettingTypeError);
      expect(e.message, key).toContain(`Setting "${key}" = ${JSON.stringify(text)} has the wrong type: a text, not `);
      expect(coerceValue(key, text), key).toEqual(d);
    }
    // A value of the right type but out of range is not a type error.
    const range = configError(() => coerceValue('lr', 100, 'typed'));
    expect(range).not.toBeInstanceOf(SettingTypeError);
    expect(range.message).toContain('is out of range');
    expect(configError(() => coerceValue('deltas', [0.1, '0.2'], 'typed')).message).toContain('a list with other entries, not a list of numbers');
  });

  it("integers written as '3.0' or '3e0' are integers", () => {
    expect(coerceValue('agents', '3.0')).toBe(3);
    expect(coerceValue('agents', '3e0')).toBe(3);
    expect(coerceValue('stages', '1e3')).toBe(1000);
  });

  it('typed values (from the UI) pass through unchanged', () => {
    expect(parseConfig({ lr: 0.003, customOrder: [1, 0] }).lr).toBe(0.003);
    expect(parseConfig({ customOrder: [1, 0] }).customOrder).toEqual([1, 0]);
    expect(parseConfig({ customOrder: ['1', '0'] }).customOrder).toEqual([1, 0]);
  });

  it('parseConfig does not mutate its base', () => {
    const base = parseConfig({ deltas: '0.1,0.2,0.3' });
    const copy = structuredClone(base);
    parseConfig({ lr: 0.5, deltas: '0.4,0.5,0.6' }, base);
    expect(base).toEqual(copy);
  });
});

describe('parseAssignment', () => {
  it('splits key=value at the first "=" and trims both sides', () => {
    expect(parseAssignment('lr=0.05')).toEqual(['lr', '0.05']);
    expect(parseAssignment('  lr =  0.05 ')).toEqual(['lr', '0.05']);
    expect(parseAssignment('customOrder=2,0,1')).toEqual(['customOrder', '2,0,1']);
    expect(parseAssignment('a=b=c')).toEqual(['a', 'b=c']);
    expect(parseAssignment('deltas=')).toEqual(['deltas', '']);
  });

  it('rejects input without a key or without "="', () => {
    for (const s of ['lr', '=0.05', '']) {
      const e = expectConfigError(() => parseAssignment(s), s, ['key=value', JSON.stringify(s)]);
      expect(e.value).toBe(s);
    }
  });

  it('feeds parseConfig like the CLI does', () => {
    const flags = ['lr=0.01', 'task=relay', 'agents=4', 'actions=5', 'betaAdapt=0'];
    const c = parseConfig(Object.fromEntries(flags.map(parseAssignment)));
    expect([c.lr, c.task, c.agents, c.actions, c.betaAdapt]).toEqual([0.01, 'relay', 4, 5, false]);
    const [k, v] = parseAssignment('detla=0.1');
    expectConfigError(() => parseConfig({ [k]: v }), 'detla', ['Did you mean "delta"?']);
  });
});

describe('agentDelta and resolvedProtocol', () => {
  it('agentDelta: δ for everyone unless deltas lists one per agent', () => {
    const c = parseConfig({ delta: '0.03' });
    for (let i = 0; i < 3; i++) expect(agentDelta(c, i)).toBe(0.03);
    const d = parseConfig({ delta: '0.03', deltas: '0.1,0.2,0.4' });
    expect([0, 1, 2].map((i) => agentDelta(d, i))).toEqual([0.1, 0.2, 0.4]);
  });

  it("resolvedProtocol: the task's default for auto, else the setting", () => {
    expect(resolvedProtocol(parseConfig({ task: 'climbing' }))).toBe('vote');
    expect(resolvedProtocol(parseConfig({ task: 'relay' }))).toBe('chain');
    expect(resolvedProtocol(parseConfig({ task: 'router' }))).toBe('router');
    expect(resolvedProtocol(parseConfig({ task: 'guess' }))).toBe('independent');
    expect(resolvedProtocol(parseConfig({ task: 'guess', protocol: 'vote' }))).toBe('vote');
  });
});

// ---------------------------------------------------------------------------------------------
// diffConfig round trips, on random consistent configs
// ---------------------------------------------------------------------------------------------

/** A random setting-map that should parse: every field drawn in range, consistent across fields. */
function randomInput(rng: Rng): Record<string, unknown> {
  const pick = <T>(xs: readonly T[]): T => xs[rng.int(xs.length)]!;
  const out: Record<string, unknown> = {};
  for (const key of CONFIG_KEYS) {
    if (rng.uniform() < 0.5) continue; // leave about half at their defaults
    const f: Field = CONFIG[key];
    switch (f.type) {
      case 'int': {
        const hi = Math.min(f.max, f.min + 1000);
        out[key] = f.min + rng.int(hi - f.min + 1);
        break;
      }
      case 'float':
        out[key] = f.min + (f.max - f.min) * rng.uniform();
        break;
      case 'bool':
        out[key] = rng.uniform() < 0.5;
        break;
      case 'enum':
        out[key] = pick(f.options);
        break;
      default:
        break; // lists below, once n is known
    }
  }
  // Make the cross-field settings consistent.
  const task = (out.task as Config['task'] | undefined) ?? CONFIG.task.default;
  if (isLlmTask(task)) {
    const n0 = Math.min(4, (out.agents as number | undefined) ?? CONFIG.agents.default);
    out.agents = n0;
    out.protocol = rng.uniform() < 0.5 ? 'auto' : pick(n0 >= 2 ? ['independent', 'chain', 'vote', 'router'] : ['independent', 'chain', 'vote']);
    out.level = 1 + rng.int(LLM_TASKS[task].maxLevel);
    if (task !== 'arithmetic' && out.model === 'L') out.model = 'M';
    if (rng.uniform() < 0.3) out.agentModels = Array.from({ length: n0 }, () => pick(task === 'arithmetic' ? ['S', 'M', 'L'] : ['S', 'M']));
    // int8 activations multiply a frozen quantized base on the CPU: LoRA only, not on WebGPU.
    if (out.activations === 'int8') {
      if (((out.lora as number | undefined) ?? CONFIG.lora.default) === 0) out.lora = 1 + rng.int(64);
      if (out.backend === 'webgpu') out.backend = 'cpu';
    }
  } else {
    const info = TASKS[task];
    out.protocol = rng.uniform() < 0.5 ? 'auto' : pick(info.protocols);
    if (info.fixedActions !== undefined) out.actions = info.fixedActions;
    out.agents = Math.max(2, (out.agents as number | undefined) ?? CONFIG.agents.default);
  }
  const n = out.agents as number;
  if (rng.uniform() < 0.5) out.deltas = Array.from({ length: n }, () => 1e-6 + 10 * rng.uniform() * (1 - 1e-7));
  if (out.order === 'custom' || rng.uniform() < 0.3) out.customOrder = rng.permutation(n);
  // A swap names a real agent, a stage that runs, and something of the task's kind to seat.
  if (out.swapAgent !== undefined) out.swapAgent = Math.min(out.swapAgent as number, n - 1);
  const stages = (out.stages as number | undefined) ?? CONFIG.stages.default;
  if (out.swapAt !== undefined) out.swapAt = Math.min(out.swapAt as number, stages);
  else if (stages < CONFIG.swapAt.default) out.swapAt = stages;
  out.swapTo = isLlmTask(task) ? pick(task === 'arithmetic' ? ['S', 'M', 'L'] : ['S', 'M']) : 'best';
  return out;
}

/** The same input as strings, the way a command line or a URL carries it. */
function asStrings(input: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(input).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : String(v)]));
}

describe('diffConfig', () => {
  it('is empty for the defaults and names only what changed', () => {
    expect(diffConfig(defaultConfig())).toEqual({});
    expect(diffConfig(parseConfig({ lr: '0.05', deltas: '0.1,0.2,0.3' }))).toEqual({ lr: 0.05, deltas: [0.1, 0.2, 0.3] });
    // Setting a value equal to its default is not a difference.
    expect(diffConfig(parseConfig({ lr: '0.1', task: 'climbing' }))).toEqual({});
  });

  it('round-trips through parseConfig on 200 random consistent configs (seed 4242), typed, JSON and string forms', () => {
    const rng = new Rng(4242, [1]);
    let changed = 0;
    for (let t = 0; t < 200; t++) {
      const input = randomInput(rng);
      const c = parseConfig(input);
      // The string form (every float printed by String() round-trips exactly) gives the same config.
      expect(parseConfig(asStrings(input))).toEqual(c);
      const diff = diffConfig(c);
      changed += Object.keys(diff).length;
      for (const k of Object.keys(diff) as ConfigKey[]) expect(c[k]).not.toEqual(defaultConfig()[k]);
      expect(parseConfig(diff)).toEqual(c);
      expect(parseConfig(JSON.parse(JSON.stringify(diff)) as Record<string, unknown>)).toEqual(c);
      expect(parseConfig(asStrings(diff as Record<string, unknown>))).toEqual(c);
    }
    expect(changed).toBeGreaterThan(200 * 10); // the generator really moved settings
  });

  it('every config the parser accepts builds its game (config ranges within the task limits)', () => {
    const rng = new Rng(4242, [2]);
    for (let t = 0; t < 100; t++) {
      const c = parseConfig(randomInput(rng));
      if (isLlmTask(c.task)) continue; // language tasks build no tabular game
      const game = makeGame(c.task, { agents: c.agents, actions: c.actions, protocol: resolvedProtocol(c), taskSeed: c.taskSeed, penaltyK: c.penaltyK });
      expect(game.nAgents).toBe(c.agents);
    }
    // The corners of the agents × actions box, for every task.
    for (const task of TASK_NAMES)
      for (const agents of [2, CONFIG.agents.max])
        for (const actions of [CONFIG.actions.min, CONFIG.actions.max]) {
          const fixed = TASKS[task].fixedActions;
          const c = parseConfig({ task, agents, actions: fixed ?? actions });
          expect(() => makeGame(task, { agents, actions: c.actions, protocol: resolvedProtocol(c), taskSeed: 0, penaltyK: -10 })).not.toThrow();
        }
  });
});

describe('language-task settings', () => {
  it('inconsistent team and model settings name the key, the value and what is allowed', () => {
    expectConfigError(() => parseConfig({ task: 'climbing', agents: 1 }), 'agents', ['"agents" = 1', '"climbing"', '[2, 6]']);
    expectConfigError(() => parseConfig({ task: 'arithmetic', agents: 5 }), 'agents', ['"agents" = 5', 'at most 4']);
    expectConfigError(() => parseConfig({ task: 'countdown', level: 4 }), 'level', ['"level" = 4', '"countdown"', '[1, 3]']);
    expectConfigError(() => parseConfig({ task: 'arithmetic', agents: 1, protocol: 'router' }), 'protocol', ['"router"', 'at least 2 agents']);
    expectConfigError(() => parseConfig({ task: 'countdown', model: 'L' }), 'model', ['"model" = "L"', '"countdown"', 'S, M']);
    expectConfigError(() => parseConfig({ task: 'arithmetic', activations: 'int8' }), 'activations', ['"int8"', '"lora" = 0', 'lora ≥ 1']);
    expectConfigError(() => parseConfig({ task: 'arithmetic', activations: 'int8', lora: 4, backend: 'webgpu' }), 'activations', ['"int8"', 'CPU backend', 'backend = webgpu']);
    expect(parseConfig({ task: 'arithmetic', activations: 'int8', lora: 4 }).activations).toBe('int8');
    // The page's workers: int8 activations keep backend auto on the CPU (a GPU would refuse them at seating).
    expect(agentBackend({ backend: 'auto', activations: 'int8' })).toBe('cpu');
    expect(agentBackend({ backend: 'auto', activations: 'exact' })).toBe('auto');
    expect(agentBackend({ backend: 'webgpu', activations: 'exact' })).toBe('webgpu');
  });

  it('language tasks accept every protocol and default to chain', () => {
    for (const p of ['independent', 'chain', 'vote', 'router']) expect(parseConfig({ task: 'countdown', protocol: p }).protocol).toBe(p);
    expect(resolvedProtocol(parseConfig({ task: 'arithmetic' }))).toBe('chain');
    expect(parseConfig({ task: 'arithmetic', agents: 1, model: 'L' }).agents).toBe(1);
  });
});

describe('geometry settings', () => {
  it('greedy order needs the geometric gain (geoIters ≥ 1)', () => {
    expectConfigError(() => parseConfig({ order: 'greedy', geoIters: 0 }), 'geoIters', ['"geoIters" = 0', 'greedy']);
    expect(parseConfig({ order: 'fixed', geoIters: 0 }).geoIters).toBe(0);
  });
});

describe('agentModels (one shipped model size per agent)', () => {
  it('parses a list of sizes from text and from arrays', () => {
    expect(parseConfig({ task: 'arithmetic', agents: 3, agentModels: 'S,M,S' }).agentModels).toEqual(['S', 'M', 'S']);
    expect(parseConfig({ task: 'arithmetic', agents: 2, agentModels: ['L', 'S'] }).agentModels).toEqual(['L', 'S']);
  });
  it('names the setting for every inconsistency', () => {
    expectConfigError(() => parseConfig({ task: 'arithmetic', agents: 3, agentModels: 'S,M' }), 'agentModels', ['has 2 entries', '3 agents']);
    expectConfigError(() => parseConfig({ task: 'countdown', agents: 2, agentModels: 'S,L' }), 'agentModels', ['names L', '"countdown"']);
    expectConfigError(() => parseConfig({ task: 'relay', agents: 2, agentModels: 'S,S' }), 'agentModels', ['language teams', '"relay"']);
    expectConfigError(() => parseConfig({ task: 'arithmetic', agents: 2, agentModels: 'S,XL' }), 'agentModels', ['"XL"', 'of S, M, L']);
  });
});
