/**
 * Tests for share links (src/app/share.ts).
 *
 * Round trips: every preset with random config tweaks, hide flags and steps (Rng seed 20261129, or
 * SHARE_TEST_SEED from the environment for fresh inputs; the seed is in every failure message):
 * decode(encode(s)) gives back s and the config parseConfig builds, and re-encoding gives the same
 * link. Canonical form: the same state with keys inserted in another order, hide flags shuffled and
 * repeated, gives the same string. A decoded link replays the same run (identical metrics).
 *
 * Failures: each malformed-link class — empty, wrong prefix, unknown version, bad base64url,
 * truncated deflate data, not UTF-8, not JSON, not an object, an unknown key, a wrong type, an
 * out-of-range value, a non-finite number, an inconsistent config, an unknown preset, a bad hide
 * flag, a bad step, control characters, an over-long string, a value nested thousands deep, a
 * link over the length cap, and a zip bomb past the decoded cap (refused within a second) — gives
 * its own code and its own message, which says the defaults were opened. `<script>` in a value is
 * refused, and quoted inertly. A fuzz of mutated links never throws.
 *
 * Expected messages' key facts (ranges, caps) are written out by hand, not read from the code.
 */
import { describe, expect, it } from 'vitest';
import { FormatError } from '../src/core/errors';
import { Rng } from '../src/core/rng';
import {
  MAX_SHARE_HASH_CHARS,
  MAX_SHARE_JSON_BYTES,
  MAX_SHARE_QUESTION,
  MAX_SHARE_STRING,
  SHARE_FALLBACK,
  SHARE_PREFIX,
  type ShareResult,
  type ShareState,
  base64urlEncode,
  canonicalJson,
  decodeShare,
  encodeShare,
  makeShareState,
} from '../src/app/share';
import { CONFIG, CONFIG_KEYS, type Config, type ConfigKey, parseConfig } from '../src/sat/config';
import { createTabularExperiment, runStages } from '../src/sat/experiment';
import { PRESETS, presetConfig } from '../src/sat/presets';

const SEED = Number(process.env.SHARE_TEST_SEED ?? 20261129);

// ---------------------------------------------------------------------------------------------
// Helpers

async function deflate(bytes: Uint8Array): Promise<Uint8Array> {
  const cs = new CompressionStream('deflate-raw');
  const w = cs.writable.getWriter();
  void w.write(bytes as Uint8Array<ArrayBuffer>);
  void w.close();
  return new Uint8Array(await new Response(cs.readable).arrayBuffer());
}

/** A v1 link whose JSON text is `text` (no checks: for crafting bad links). */
async function craft(text: string | Uint8Array): Promise<string> {
  const bytes = typeof text === 'string' ? new TextEncoder().encode(text) : text;
  return SHARE_PREFIX + base64urlEncode(await deflate(bytes));
}

function expectFail(r: ShareResult, code: string, ...fragments: string[]): string {
  if (r.ok) throw new Error(`expected a '${code}' failure, got ok`);
  expect(r.code, r.error).toBe(code);
  expect(r.error.startsWith('This link could not be opened: ')).toBe(true);
  expect(r.error.endsWith(SHARE_FALLBACK)).toBe(true);
  for (const f of fragments) expect(r.error).toContain(f);
  // Never a raw control character in a message (values are JSON-quoted).
  expect(/[\u0000-\u001f]/.test(r.error)).toBe(false);
  return r.error;
}

/** A 53-bit uniform in [0, 1). */
function u53(rng: Rng): number {
  return (rng.nextU32() * 2 ** 21 + (rng.nextU32() >>> 11)) / 2 ** 53;
}

/** A random allowed value of `key` (range only; consistency is checked by the caller). */
function randomValue(rng: Rng, key: ConfigKey, c: Config): unknown {
  const f = CONFIG[key];
  switch (f.type) {
    case 'int':
      return f.min + Math.min(f.max - f.min, Math.floor(u53(rng) * (f.max - f.min + 1)));
    case 'float':
      if (f.log && f.min > 0) return Math.min(f.max, f.min * Math.exp(u53(rng) * Math.log(f.max / f.min)));
      return f.min + u53(rng) * (f.max - f.min);
    case 'bool':
      return rng.uniform() < 0.5;
    case 'enum':
      return f.options[rng.int(f.options.length)];
    case 'intList':
      return rng.permutation(c.agents);
    case 'floatList':
      return Array.from({ length: c.agents }, () => f.min + u53(rng) * (f.max - f.min));
  }
}

/** The preset's config with up to 5 random consistent tweaks. */
function tweak(rng: Rng, preset: string): Config {
  let c = presetConfig(preset);
  const tries = 1 + rng.int(5);
  for (let t = 0; t < tries; t++) {
    const key = CONFIG_KEYS[rng.int(CONFIG_KEYS.length)]!;
    try {
      c = parseConfig({ [key]: randomValue(rng, key, c) }, c);
    } catch {
      // inconsistent with the rest (e.g. 2 actions on the climbing game): skip this tweak
    }
  }
  return c;
}

function randomHide(rng: Rng): string[] {
  const keys: string[] = [...CONFIG_KEYS, 'preset'];
  return keys.filter(() => rng.uniform() < 0.15);
}

// ---------------------------------------------------------------------------------------------

describe('share links: round trips', () => {
  it('no config key collides with the link\'s own entries', () => {
    for (const k of CONFIG_KEYS as string[]) {
      expect(k === 'preset' || k === 'step' || k === 'projector' || k === 'question' || k.endsWith('_hide'), k).toBe(false);
    }
  });

  it('every preset, with random tweaks, hide flags and steps, round-trips exactly (seed in messages)', async () => {
    const rng = new Rng(SEED);
    for (const p of PRESETS) {
      for (let rep = 0; rep < 6; rep++) {
        const cfg = tweak(rng, p.name);
        const hide = randomHide(rng);
        const stage = 1 + rng.int(cfg.stages);
        const step = rng.uniform() < 0.3 ? undefined : rng.uniform() < 0.5 ? { stage } : { stage, agent: rng.int(cfg.agents) };
        const state = makeShareState(cfg, { preset: p.name, hide, ...(step ? { step } : {}) });
        const where = `seed ${SEED}, preset ${p.name}, rep ${rep}`;
        const hash = await encodeShare(state);
        expect(hash.startsWith('#v1.'), where).toBe(true);
        expect(hash.length, where).toBeLessThanOrEqual(MAX_SHARE_HASH_CHARS);
        expect(/^#v1\.[A-Za-z0-9_-]+$/.test(hash), where).toBe(true);
        const r = await decodeShare(hash);
        if (!r.ok) throw new Error(`${where}: ${r.error}`);
        expect(r.state, where).toEqual(state);
        expect(r.config, where).toEqual(cfg);
        expect(await encodeShare(r.state), where).toBe(hash);
        // The hash without its '#' reads the same.
        expect(await decodeShare(hash.slice(1)), where).toEqual(r);
      }
    }
  });

  it('without a preset the defaults are the base', async () => {
    const cfg = parseConfig({ task: 'penalty', agents: 2, penaltyK: -3.25, seed: 99 });
    const state = makeShareState(cfg);
    expect(state.preset).toBeUndefined();
    expect(state.config).toEqual({ task: 'penalty', agents: 2, penaltyK: -3.25, seed: 99 });
    const r = await decodeShare(await encodeShare(state));
    expect(r.ok && r.config).toEqual(cfg);
  });

  it('projector: true round-trips and opens the same settings; any other value is refused by name', async () => {
    const cfg = presetConfig('coordination');
    const state = makeShareState(cfg, { preset: 'coordination', projector: true });
    const r = await decodeShare(await encodeShare(state));
    expect(r.ok && r.state.projector).toBe(true);
    expect(r.ok && r.config).toEqual(cfg);
    expect(makeShareState(cfg, { preset: 'coordination', projector: false }).projector).toBeUndefined();
    expectFail(await decodeShare(await craft('{"preset":"climbing","projector":1}')), 'type', '"projector" = 1 must be true');
  });

  it('a teacher\'s question round-trips up to its own cap; an empty or longer one is refused by name', async () => {
    const cfg = presetConfig('coordination');
    const question = 'Why do the two agents end on the same optimum when they move one at a time? '.repeat(3).trim();
    expect(question.length).toBeGreaterThan(MAX_SHARE_STRING);
    const r = await decodeShare(await encodeShare(makeShareState(cfg, { preset: 'coordination', question, hide: ['preset'] })));
    expect(r.ok && r.state.question).toBe(question);
    expectFail(await decodeShare(await craft(JSON.stringify({ preset: 'climbing', question: 'x'.repeat(MAX_SHARE_QUESTION + 1) }))), 'string', `longer than ${MAX_SHARE_QUESTION}`);
    expectFail(await decodeShare(await craft('{"preset":"climbing","question":"  "}')), 'type', '"question"');
    expectFail(await decodeShare(await craft('{"preset":"climbing","question":7}')), 'type', '"question"');
  });

  it('a state made only of defaults is the shortest link and opens the defaults', async () => {
    const hash = await encodeShare({ config: {}, hide: [] });
    const r = await decodeShare(hash);
    expect(r.ok && r.config).toEqual(parseConfig({}));
    expect(r.ok && r.state).toEqual({ config: {}, hide: [] });
  });

  it('is canonical: key insertion order and repeated or shuffled hide flags do not change the link', async () => {
    const rng = new Rng(SEED + 1);
    for (let rep = 0; rep < 10; rep++) {
      const p = PRESETS[rng.int(PRESETS.length)]!.name;
      const cfg = tweak(rng, p);
      const base = makeShareState(cfg, { preset: p, hide: randomHide(rng), step: { stage: 1, agent: 0 } });
      const keys = Object.keys(base.config);
      const order = rng.permutation(keys.length);
      const shuffled: Record<string, unknown> = {};
      for (const i of order) shuffled[keys[i]!] = (base.config as Record<string, unknown>)[keys[i]!];
      const hidePerm = rng.permutation(base.hide.length).map((i) => base.hide[i]!);
      const other: ShareState = { step: { agent: 0, stage: 1 }, hide: [...hidePerm, ...hidePerm], config: shuffled, preset: p };
      expect(await encodeShare(other), `seed ${SEED + 1}, rep ${rep}`).toBe(await encodeShare(base));
    }
  });

  it('canonicalJson sorts keys at every level', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 0 }], c: true } })).toBe('{"a":{"c":true,"d":[2,{"y":0,"z":1}]},"b":1}');
  });

  it('opening a link replays the run: same config ⇒ identical metrics (timings aside)', async () => {
    const cfg = presetConfig('penalty', { seed: 11, stages: 2, batch: 4 });
    const r = await decodeShare(await encodeShare(makeShareState(cfg, { preset: 'penalty' })));
    if (!r.ok) throw new Error(r.error);
    const a = await runStages(createTabularExperiment(cfg), 2);
    const b = await runStages(createTabularExperiment(r.config), 2);
    // Everything but wall-clock timings (perf/…) is a function of (seed, config).
    const noPerf = (m: Record<string, unknown>) => Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('perf/')));
    expect(b.map((s) => noPerf(s.metrics))).toEqual(a.map((s) => noPerf(s.metrics)));
    expect(b.flatMap((s) => s.steps.map((x) => x.advNorm))).toEqual(a.flatMap((s) => s.steps.map((x) => x.advNorm)));
  });

  it('encodeShare refuses a state that would not open', async () => {
    await expect(encodeShare({ config: { lr: 100 }, hide: [] })).rejects.toBeInstanceOf(FormatError);
    await expect(encodeShare({ config: { lr: '0.1' }, hide: [] })).rejects.toThrow(/wrong type/);
    await expect(encodeShare({ preset: 'nope', config: {}, hide: [] })).rejects.toThrow(/unknown preset/);
    await expect(encodeShare({ config: {}, hide: ['nope'] })).rejects.toThrow(/nope_hide/);
    await expect(encodeShare({ config: { lr: NaN }, hide: [] })).rejects.toThrow(/"lr" = null/);
    await expect(encodeShare({ config: {}, hide: [], step: { stage: 31 } })).rejects.toThrow(/\[1, 30\]/);
  });
});

describe('share links: every malformed link opens the defaults with its own message', () => {
  it('gives a specific message for each class', async () => {
    const messages: string[] = [];
    const add = (m: string) => messages.push(m);
    const valid = await encodeShare({ preset: 'climbing', config: { lr: 0.25, seed: 3 }, hide: ['lr'] });

    add(expectFail(await decodeShare(''), 'empty', 'no settings'));
    expectFail(await decodeShare('#'), 'empty');
    add(expectFail(await decodeShare('#lr=0.1&seed=3'), 'prefix', '"#v1."'));
    add(expectFail(await decodeShare('#v9.' + valid.slice(4)), 'version', 'version 9', 'reads version 1', 'newer'));
    add(expectFail(await decodeShare('#v1.abc$def'), 'base64', 'base64url', 'position 4'));
    add(expectFail(await decodeShare('#v1.abcde'), 'base64', 'cannot encode whole bytes'));

    // Truncated deflate: cut the compressed bytes (not the text, which would be a base64 error).
    const full = await deflate(new TextEncoder().encode('{"lr":0.25,"preset":"climbing","seed":3}'));
    add(expectFail(await decodeShare(SHARE_PREFIX + base64urlEncode(full.slice(0, full.length >> 1))), 'deflate', 'damaged or incomplete'));
    // Not deflate at all.
    expectFail(await decodeShare(SHARE_PREFIX + base64urlEncode(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff))), 'deflate');

    add(expectFail(await decodeShare(await craft(Uint8Array.of(0x7b, 0xff, 0xfe, 0x7d))), 'utf8', 'UTF-8'));
    add(expectFail(await decodeShare(await craft('hello')), 'json', 'not valid JSON'));
    add(expectFail(await decodeShare(await craft('[1,2,3]')), 'not-object', 'a JSON array'));
    expectFail(await decodeShare(await craft('42')), 'not-object', 'the JSON value 42');
    expectFail(await decodeShare(await craft('null')), 'not-object');
    add(expectFail(await decodeShare(await craft('{"lrr":0.1}')), 'unknown-key', 'Unknown setting "lrr"', 'Did you mean "lr"', '"<setting>_hide"'));
    expectFail(await decodeShare(await craft('{"__proto__":{"lr":1}}')), 'unknown-key', '__proto__');
    expectFail(await decodeShare(await craft('{"nope_hide":true}')), 'unknown-key', 'nope_hide');
    add(expectFail(await decodeShare(await craft('{"lr":100}')), 'range', '"lr" = 100', 'out of range', 'a number in [1e-5, 10]'));
    expectFail(await decodeShare(await craft('{"agents":2.5}')), 'range', '"agents" = 2.5', 'not an integer');
    expectFail(await decodeShare(await craft('{"deltas":[0.1,0.1,0.1,0.1,0.1,0.1,0.1]}')), 'range', '"deltas"', 'has 7 entries');
    // NaN: JSON has no NaN (so the text is not JSON); an overflowing literal becomes Infinity.
    expectFail(await decodeShare(await craft('{"lr":NaN}')), 'json');
    expectFail(await decodeShare(await craft('{"lr":1e999}')), 'range', '"lr" = Infinity', 'not finite');
    add(expectFail(await decodeShare(await craft('{"lr":"0.1"}')), 'type', '"lr" = "0.1"', 'wrong type', 'a number'));
    expectFail(await decodeShare(await craft('{"lr":null}')), 'type', '"lr" = null');
    expectFail(await decodeShare(await craft('{"betaAdapt":1}')), 'type', 'true or false');
    expectFail(await decodeShare(await craft('{"deltas":"0.1,0.2"}')), 'type', 'a list of numbers');
    // A value nested thousands deep is refused without a stack overflow.
    expectFail(await decodeShare(await craft(`{"deltas":${'['.repeat(5000)}${']'.repeat(5000)}}`)), 'type', 'nested too deeply');
    expectFail(await decodeShare(await craft(`{"step":{"stage":${'{"a":'.repeat(2000)}1${'}'.repeat(2000)}}}`)), 'step');
    add(expectFail(await decodeShare(await craft('{"actions":4,"task":"climbing"}')), 'inconsistent', '"actions" = 4', 'exactly 3 actions'));
    add(expectFail(await decodeShare(await craft('{"preset":"nope"}')), 'preset', 'unknown preset "nope"', 'climbing'));
    expectFail(await decodeShare(await craft('{"preset":3}')), 'type', '"preset" = 3');
    add(expectFail(await decodeShare(await craft('{"lr_hide":false}')), 'hide', '"lr_hide" = false', 'must be true'));
    add(expectFail(await decodeShare(await craft('{"step":{"stage":0}}')), 'step', 'an integer in [1, 30]'));
    expectFail(await decodeShare(await craft('{"stages":5,"step":{"stage":6}}')), 'step', '[1, 5]');
    expectFail(await decodeShare(await craft('{"step":{"agent":3,"stage":2}}')), 'step', 'agent', '[0, 2]');
    expectFail(await decodeShare(await craft('{"step":{"agent":-1,"stage":2}}')), 'step', 'agent');
    expectFail(await decodeShare(await craft('{"step":{"stage":1.5}}')), 'step');
    expectFail(await decodeShare(await craft('{"step":3}')), 'step', 'not an object');
    expectFail(await decodeShare(await craft('{"step":{"position":1,"stage":1}}')), 'step', 'unknown entry "position"');
    add(expectFail(await decodeShare(await craft('{"task":"clim\\u0000bing"}')), 'string', 'control character', '\\u0000'));
    expectFail(await decodeShare(await craft('{"task":"a\\u202ebc"}')), 'string', 'control character');
    expectFail(await decodeShare(await craft('{"x\\nY":1}')), 'string', 'the key');
    expectFail(await decodeShare(await craft(`{"task":"${'x'.repeat(65)}"}`)), 'string', 'longer than 64');
    add(expectFail(await decodeShare('#v1.' + 'A'.repeat(MAX_SHARE_HASH_CHARS)), 'too-long', `${MAX_SHARE_HASH_CHARS + 4} characters`, `${MAX_SHARE_HASH_CHARS}`));

    // Every class has its own message.
    expect(new Set(messages).size).toBe(messages.length);
  });

  it('a v1 link deflated by the platform (as earlier versions wrote links) opens to the same state as one written now', async () => {
    const state = makeShareState(presetConfig('relay', { lr: 0.23, seed: 9 }), { preset: 'relay', step: { stage: 2, agent: 1 }, hide: ['seed'] });
    const now = await encodeShare(state);
    const before = await craft(canonicalJson({ lr: 0.23, preset: 'relay', seed: 9, seed_hide: true, step: { agent: 1, stage: 2 } }));
    const a = await decodeShare(now);
    const b = await decodeShare(before);
    if (!a.ok || !b.ok) throw new Error(`${!a.ok ? a.error : ''} ${!b.ok ? b.error : ''}`);
    expect(b.state).toEqual(a.state);
    expect(b.config).toEqual(a.config);
  });

  it('a zip bomb (3 MB of JSON in a link under the length cap) is refused past the decoded cap', async () => {
    const big = new TextEncoder().encode(`{"task":"${'a'.repeat(3_000_000)}"}`);
    const bomb = await craft(big);
    expect(bomb.length).toBeLessThanOrEqual(MAX_SHARE_HASH_CHARS);
    // Refused by the capped inflater, which stops as soon as the cap is passed (tested without a
    // clock in tests/savefile.test.ts: a bomb damaged past its first part is still 'too-large').
    expectFail(await decodeShare(bomb), 'too-large', `more than ${MAX_SHARE_JSON_BYTES} bytes`);
    // Just over the cap is refused too; just under it is read (and then judged on its contents).
    const over = await craft(`{"task":"${'a'.repeat(MAX_SHARE_JSON_BYTES)}"}`);
    expectFail(await decodeShare(over), 'too-large');
    const under = await craft(`{"task":"${'a'.repeat(MAX_SHARE_JSON_BYTES - 20)}"}`);
    expectFail(await decodeShare(under), 'string', 'longer than 64');
  });

  it('<script> in a value or key is refused, and quoted as inert text', async () => {
    const inValue = expectFail(await decodeShare(await craft('{"task":"<script>alert(1)</script>"}')), 'range', '"task" = "<script>alert(1)</script>"', 'not an allowed choice');
    expect(inValue).toContain('one of climbing, penalty');
    expectFail(await decodeShare(await craft('{"<img src=x onerror=alert(1)>":1}')), 'unknown-key');
    expectFail(await decodeShare(await craft('{"preset":"<script>"}')), 'preset');
  });

  it('never throws on mutated or random links (fuzz, seeded)', async () => {
    const rng = new Rng(SEED + 2);
    const valid = await encodeShare({ preset: 'relay', config: { lr: 0.123, seed: 42, deltas: [0.1, 0.2, 0.3] }, hide: ['lr', 'preset'], step: { stage: 2, agent: 1 } });
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_#.%&=~ \u00e9\u0000';
    for (let k = 0; k < 300; k++) {
      let h = valid;
      const kind = rng.int(4);
      if (kind === 0) {
        const i = 4 + rng.int(h.length - 4);
        h = h.slice(0, i) + alphabet[rng.int(alphabet.length)] + h.slice(i + 1);
      } else if (kind === 1) {
        h = h.slice(0, 4 + rng.int(h.length - 4));
      } else if (kind === 2) {
        h = h + alphabet[rng.int(alphabet.length)]!.repeat(1 + rng.int(4));
      } else {
        h = Array.from({ length: rng.int(40) }, () => alphabet[rng.int(alphabet.length)]).join('');
      }
      const r = await decodeShare(h);
      if (!r.ok) expect(r.error.endsWith(SHARE_FALLBACK), `seed ${SEED + 2}, case ${k}: ${h}`).toBe(true);
    }
  });
});
