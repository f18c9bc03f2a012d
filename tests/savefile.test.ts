/**
 * Tests for the experiment file (src/app/savefile.ts). The autosave has its own (tests/autosave.test.ts).
 *
 * Round trip of a real small experiment (relay preset, 2 stages, agents' snapshot() at the stage
 * boundary, a cursor one agent step into stage 3): parse(serialize(x)) equals x exactly — every
 * typed array bit for bit, NaN/±Infinity/−0, keys starting with "$" — and the same data gives the
 * same bytes. Restoring the file into a fresh team and running the next stage gives the same
 * metrics as the run that was never interrupted (nothing lost).
 *
 * The file is a standard gzip of a safetensors file: Node's own zlib (an implementation independent
 * of the one that wrote it, checking gzip's CRC-32 and length) inflates it, and the safetensors
 * reader reads the result.
 *
 * Corruptions, each with its own code and message: empty, wrong signature, a JSON file, the
 * uncompressed contents, a file of the older format version 1, a text-mode transfer (stripped high
 * bit), an unknown version, truncation (at which byte, at many cut points, inside the gzip header,
 * the compressed data and the trailer), extra bytes, a flipped bit anywhere in the compressed data
 * or the trailer (checksum; Rng seed 77), a gzip bomb, contents that are not a valid container (a
 * lying header length, a tensor of another type or shape), a header that is not JSON / not an
 * object / of another format, a
 * config out of range or inconsistent (parseConfig's message), an agent count that differs from
 * the config, inconsistent snapshot sizes (optimizer state, info, the game's table), a dangling blob reference or unknown tag, malformed
 * stage records, a bad cursor. Random garbage never throws. And the regressions the fuzzer
 * (tests/fuzz.test.ts) found: every field of a stage record typed (numbers, counts, agents, list
 * lengths), σ matching the steps, each blob referred to exactly once, finite weights and β, a deep
 * "format" or an object-valued setting described rather than printed as "[object Object]", a long
 * unknown setting refused at once, a −0 cursor read as 0.
 *
 * Expected facts (signatures, ranges) are written out by hand, not read from the code.
 */
import { exactDiff } from './helpers/exactDiff';
import { gunzipSync as nodeGunzip, gzipSync as nodeGzip } from 'node:zlib';
import { deflateSync, gzipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng';
import { inflateCapped } from '../src/app/inflate';
import {
  EXPERIMENT_MAGIC,
  MAX_EXPERIMENT_BYTES,
  OLD_EXPERIMENT_MAGIC,
  type Blob64,
  type ExperimentData,
  type ParseResult,
  decodeContainer,
  encodeContainer,
  parseExperimentFile,
  serializeExperiment,
} from '../src/app/savefile';
import { createTabularExperiment, runStages } from '../src/sat/experiment';
import { presetConfig } from '../src/sat/presets';
import type { StageRecord } from '../src/sat/stage';
import { readSafetensors, writeSafetensors } from '../src/model/safetensors';

// ---------------------------------------------------------------------------------------------
// Helpers


const CFG = presetConfig('relay', { stages: 3, batch: 4, seed: 5 });

/** A real experiment: 2 stages of the relay, the team at the boundary, agent 1's step of stage 3 the last one done. */
async function realExperiment(): Promise<ExperimentData> {
  const exp = createTabularExperiment(CFG);
  const stages = await runStages(exp, 2);
  const snaps = await Promise.all(exp.team.map((a) => a.snapshot()));
  const infos = await Promise.all(exp.team.map((a) => a.info()));
  return {
    config: exp.cfg,
    presetName: 'relay',
    createdAt: '2026-11-29T17:00:00.000Z',
    stages,
    agents: snaps.map((snapshot, i) => ({ snapshot, info: infos[i]! })),
    betas: exp.betas.slice(),
    cursor: { stage: 3, agent: 1 },
  };
}

let cached: { data: ExperimentData; bytes: Uint8Array } | null = null;
async function sample(): Promise<{ data: ExperimentData; bytes: Uint8Array }> {
  if (!cached) {
    const data = await realExperiment();
    cached = { data, bytes: serializeExperiment(data) };
  }
  return { data: cached.data, bytes: cached.bytes.slice() };
}

const FALLBACK = 'Nothing was loaded; the experiment on the page is unchanged.';

function expectFail(r: ParseResult<unknown>, code: string, ...fragments: string[]): string {
  if (r.ok) throw new Error(`expected a '${code}' failure, got ok`);
  expect(r.code, r.error).toBe(code);
  expect(r.error.startsWith('This experiment file cannot be opened: ')).toBe(true);
  expect(r.error.endsWith(FALLBACK)).toBe(true);
  for (const f of fragments) expect(r.error).toContain(f);
  return r.error;
}

/** Rewrites a valid file's header (and blobs) and packs it again with a fresh, valid checksum. */
function rewrite(bytes: Uint8Array, edit: (h: any, blobs: Blob64[]) => void): Uint8Array {
  const c = decodeContainer(bytes);
  if (!c.ok) throw new Error(c.error);
  const h: unknown = JSON.parse(c.value.header);
  edit(h, c.value.blobs);
  return encodeContainer(JSON.stringify(h), c.value.blobs);
}

function u32(bytes: Uint8Array, at: number, v: number): Uint8Array {
  const out = bytes.slice();
  new DataView(out.buffer).setUint32(at, v, true);
  return out;
}

/** A file's contents (the safetensors bytes inside the gzip), and a file made of edited contents. */
const contentsOf = (bytes: Uint8Array) => new Uint8Array(nodeGunzip(bytes));
const fileOf = (contents: Uint8Array) => gzipSync(contents, { mtime: 0 });

// ---------------------------------------------------------------------------------------------

describe('experiment file: round trips', () => {
  it('is a standard gzip of a safetensors file (read back by Node\'s zlib and the safetensors reader)', async () => {
    const { data, bytes } = await sample();
    const st = readSafetensors(contentsOf(bytes));
    expect(st.metadata.format).toBe('sat-playground-experiment');
    expect(st.metadata.version).toBe('2');
    const header = JSON.parse(st.metadata.header!);
    expect(header.cursor).toEqual({ stage: 3, agent: 1 });
    expect(header.agents[0].params).toEqual({ $f64: 0 });
    expect(st.tensors.get('0')!.data).toEqual(data.agents[0]!.snapshot.params);
    // And a file another gzip program wrote is read too.
    const r = parseExperimentFile(new Uint8Array(nodeGzip(contentsOf(bytes))));
    expect(r.ok).toBe(true);
  });

  it('a real experiment round-trips exactly, typed arrays included, and the bytes are deterministic', async () => {
    const { data, bytes } = await sample();
    expect(Array.from(bytes.subarray(0, 3))).toEqual(Array.from(EXPERIMENT_MAGIC));
    expect(Array.from(EXPERIMENT_MAGIC)).toEqual([0x1f, 0x8b, 0x08]);
    const r = parseExperimentFile(bytes);
    if (!r.ok) throw new Error(r.error);
    expect(exactDiff(r.value, data)).toBeNull();
    expect(r.value.stages[0]!.steps[0]!.advNorm).toBeInstanceOf(Float64Array);
    expect(r.value.stages[1]!.steps[2]!.kl.length).toBeGreaterThan(0);
    expect(r.value.agents[2]!.snapshot.params.length).toBe(data.agents[2]!.snapshot.params.length);
    expect(serializeExperiment(data)).toEqual(bytes);
    expect(serializeExperiment(r.value)).toEqual(bytes);
  });

  it('keeps NaN, ±Infinity, −0, NaN inside typed arrays, and keys that start with "$"', async () => {
    const { data } = await sample();
    const s0 = data.stages[0]!;
    const weird: StageRecord = {
      ...s0,
      metrics: { ...s0.metrics, 'x/nan': NaN, 'x/inf': Infinity, 'x/ninf': -Infinity, 'x/negzero': -0, 'x/list': [NaN, -0, 1e-310, Number.MAX_VALUE], $num: 1, $$x: 2, $f64: 3 },
      steps: s0.steps.map((st, k) => (k === 0 ? { ...st, kl: Float64Array.of(NaN, -0, Infinity, -Infinity, 5e-324), advRaw: new Float64Array(0) } : st)),
    };
    const odd: ExperimentData = { ...data, stages: [weird, data.stages[1]!] };
    const r = parseExperimentFile(serializeExperiment(odd));
    if (!r.ok) throw new Error(r.error);
    expect(exactDiff(r.value, odd)).toBeNull();
    expect(Object.is(r.value.stages[0]!.metrics['x/negzero'], -0)).toBe(true);
  });

  it('a restored file continues the run exactly as if it had never stopped (nothing lost)', async () => {
    const { bytes } = await sample();
    const r = parseExperimentFile(bytes);
    if (!r.ok) throw new Error(r.error);
    const saved = r.value;
    // The uninterrupted run.
    const a = createTabularExperiment(CFG);
    const aStages = await runStages(a, 3);
    // A fresh team restored from the file, then the third stage.
    const b = createTabularExperiment(saved.config);
    await Promise.all(b.team.map((agent, i) => agent.restore(saved.agents[i]!.snapshot)));
    b.betas.splice(0, b.betas.length, ...saved.betas);
    b.stagesDone = saved.stages.length;
    b.lastEval = saved.stages[saved.stages.length - 1]!.evaluation;
    const [bThird] = await runStages(b, 1);
    const noPerf = (m: Record<string, unknown>) => Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('perf/')));
    expect(noPerf(bThird!.metrics)).toEqual(noPerf(aStages[2]!.metrics));
    expect(exactDiff(await Promise.all(b.team.map((x) => x.snapshot())), await Promise.all(a.team.map((x) => x.snapshot())))).toBeNull();
  });

  it('refuses to save what it cannot store, naming where', async () => {
    const { data } = await sample();
    const bad = { ...data, stages: [{ ...data.stages[0]!, metrics: { m: new Map() } }] } as unknown as ExperimentData;
    expect(() => serializeExperiment(bad)).toThrow(/stages\[0\]\.metrics\.m: a Map/);
  });
});

describe('experiment file: every corruption has its own message', () => {
  it('gives a specific message for each class', async () => {
    const { bytes } = await sample();
    const n = bytes.length;
    const messages: string[] = [];
    const add = (m: string) => messages.push(m);

    add(expectFail(parseExperimentFile(new Uint8Array(0)), 'truncated', 'empty'));
    add(expectFail(parseExperimentFile(new TextEncoder().encode('GIF89a, not an experiment')), 'magic', 'not a SAT Playground experiment file'));
    add(expectFail(parseExperimentFile(new TextEncoder().encode('{"format":"sat-playground-experiment"}')), 'magic', 'JSON text file'));
    add(expectFail(parseExperimentFile(contentsOf(bytes)), 'magic', 'uncompressed contents', 'gzip'));
    // A file of the older format (version 1): refused, saying so; not converted.
    const old = new Uint8Array(200);
    old.set([0x89, 0x53, 0x41, 0x54, 0x0d, 0x0a, 0x1a, 0x0a, 1, 0, 0, 0]);
    expect(Array.from(OLD_EXPERIMENT_MAGIC)).toEqual(Array.from(old.subarray(0, 8)));
    add(expectFail(parseExperimentFile(old), 'version', 'from an older version of the playground', 'format version 1', 'does not convert'));
    // Text-mode transfers: the high bit stripped (of this format's signature or of the older one's).
    const hi = bytes.slice();
    hi[1] = 0x0b;
    add(expectFail(parseExperimentFile(hi), 'text-mode', 'transferred as text'));
    const oldHi = old.slice();
    oldHi[0] = 0x09;
    expectFail(parseExperimentFile(oldHi), 'text-mode', 'older version');
    const c0 = decodeContainer(bytes);
    if (!c0.ok) throw new Error(c0.error);
    add(expectFail(parseExperimentFile(encodeContainer(c0.value.header, c0.value.blobs, 3)), 'version', 'version 3', 'reads version 2', 'newer'));
    expectFail(parseExperimentFile(encodeContainer(c0.value.header, c0.value.blobs, 0)), 'version', 'version 0');

    // Truncation, at many cut points (gzip header, compressed data, trailer): the message names the byte.
    add(expectFail(parseExperimentFile(bytes.slice(0, n - 100)), 'truncated', `truncated at byte ${n - 100}`, 'ends before the end of the stream'));
    for (const cut of [1, 2, 5, 9, 10, 11, 19, 20, 100, n >> 1, n - 9, n - 8, n - 4, n - 1]) {
      expectFail(parseExperimentFile(bytes.slice(0, cut)), 'truncated', `truncated at byte ${cut}`);
    }
    add(expectFail(parseExperimentFile(bytes.slice(0, n - 3)), 'truncated', "inside gzip's 8-byte trailer"));
    const longer = new Uint8Array(n + 3);
    longer.set(bytes);
    add(expectFail(parseExperimentFile(longer), 'trailing', `3 unexpected bytes after its end at byte ${n}`));
    const much = new Uint8Array(n + 5000);
    much.set(bytes);
    expectFail(parseExperimentFile(much), 'trailing', `5000 unexpected bytes after its end at byte ${n}`);

    // A flipped bit anywhere in the compressed data or the trailer: checksum mismatch or damaged
    // data (seeded positions; the last data byte is skipped, its padding bits after the end code mean nothing).
    const rng = new Rng(77);
    let checksum = '';
    for (let k = 0; k < 40; k++) {
      const at = k % 4 === 0 ? n - 8 + rng.int(8) : 10 + rng.int(n - 19);
      const bad = bytes.slice();
      bad[at] = bad[at]! ^ (1 << rng.int(8));
      const m = expectFail(parseExperimentFile(bad), (parseExperimentFile(bad) as { code: string }).code);
      expect(['checksum', 'truncated'], m).toContain((parseExperimentFile(bad) as { code: string }).code);
      if (at >= n - 8) checksum = expectFail(parseExperimentFile(bad), 'checksum', 'checksum mismatch', 'corrupted');
    }
    add(checksum);
    add(expectFail(parseExperimentFile(u32(bytes, n - 4, 7)), 'checksum', 'length 7', 'corrupted'));
    const garbage = bytes.slice();
    garbage.fill(0xff, 10, 40);
    add(expectFail(parseExperimentFile(garbage), 'checksum', 'compressed data is damaged'));
    const flagged = bytes.slice();
    flagged[3] = 0xe0;
    add(expectFail(parseExperimentFile(flagged), 'layout', 'reserved flag bits'));

    // A gzip bomb: inflating stops as soon as the cap is passed (64 MiB of zeros in 64 KiB, against
    // a cap lowered to 1 MiB so that the test stays cheap; the page's cap is MAX_EXPERIMENT_BYTES).
    const bomb = new Uint8Array(nodeGzip(new Uint8Array(64 << 20), { level: 9 }));
    expect(MAX_EXPERIMENT_BYTES).toBe(1024 * 1024 * 1024);
    add(expectFail(parseExperimentFile(bomb, 1 << 20), 'too-large', 'decompresses to more than the 1048576 bytes'));
    // "As soon as": damage the bomb's second half. Inflated to the end, the damage is found; capped
    // at 1 MiB (about the first 1 KiB of its input), the inflater stops before it reaches it.
    const raw = deflateSync(new Uint8Array(64 << 20), { level: 9 });
    raw.fill(0xff, raw.length >> 1);
    expect(inflateCapped(raw, 2 ** 31, 4096)).toMatchObject({ ok: false, why: 'damaged' });
    expect(inflateCapped(raw, 1 << 20, 4096)).toMatchObject({ ok: false, why: 'too-large' });

    // Well-formed gzip, contents that are not a valid container or header.
    add(expectFail(parseExperimentFile(encodeContainer('{"format": nope', [])), 'json', 'not valid JSON'));
    add(expectFail(parseExperimentFile(encodeContainer('[1,2]', [])), 'format', 'not a JSON object'));
    add(expectFail(parseExperimentFile(encodeContainer('{}', [], 2, 'something-else')), 'format', '"something-else"'));
    const inner = contentsOf(bytes);
    add(expectFail(parseExperimentFile(fileOf(u32(inner, 0, inner.length))), 'layout', 'not a valid container', 'runs past the end'));
    const badUtf8 = inner.slice();
    badUtf8[12] = 0xff;
    expectFail(parseExperimentFile(fileOf(badUtf8)), 'layout', 'UTF-8');
    const st = readSafetensors(inner);
    const t = st.tensors.get('0')!;
    st.tensors.set('0', { dtype: 'U8', shape: [t.data.byteLength], data: new Uint8Array(t.data.buffer) });
    add(expectFail(parseExperimentFile(fileOf(writeSafetensors(st.tensors, st.metadata))), 'layout', 'blob 0 has the type U8'));
    st.tensors.set('0', { dtype: 'F64', shape: [1, t.data.length], data: t.data });
    expectFail(parseExperimentFile(fileOf(writeSafetensors(st.tensors, st.metadata))), 'layout', 'blob 0 has the shape [1, ');
    st.tensors.set('0', t);
    st.tensors.set('x', t);
    expectFail(parseExperimentFile(fileOf(writeSafetensors(st.tensors, st.metadata))), 'layout', 'tensor the text "x" is not a blob number');
    const noHeader = { ...st.metadata };
    delete noHeader.header;
    st.tensors.delete('x');
    expectFail(parseExperimentFile(fileOf(writeSafetensors(st.tensors, noHeader))), 'format', 'no experiment header');

    add(expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.config.lr = 100))), 'config', '"lr" = 100', 'out of range', 'a number in [1e-5, 10]'));
    expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.config.agents = 1))), 'config', '"agents" = 1', 'too few');
    expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.config.nope = 1))), 'config', 'Unknown setting "nope"');
    add(expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.config.agents = 4))), 'agents', 'holds 3 agents', 'agents = 4'));
    expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.betas = [0.1]))), 'agents', 'β list');
    add(
      expectFail(
        parseExperimentFile(rewrite(bytes, (h, blobs) => (blobs[h.agents[1].optim.$f64] = new Float64Array(5)))),
        'snapshot',
        "agent 1's snapshot sizes are inconsistent",
        'has 5',
      ),
    );
    expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.agents[0].info.parameters += 1))), 'snapshot', "agent 0's snapshot sizes are inconsistent", 'its info says');
    expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.agents[0].params = [1, 2]))), 'snapshot', 'no parameter blob');
    expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.config.actions = 4))), 'snapshot', "agent 0's snapshot has", 'the relay game gives it a', 'table');
    expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.agents[0].params = { $f64: 9999 }))), 'format', 'refers to blob 9999');
    expectFail(parseExperimentFile(rewrite(bytes, (h, blobs) => (blobs[h.agents[0].params.$f64] = new Int32Array(3)))), 'format', 'expects a f64 blob');
    expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.stages[0].metrics = { $evil: 1 }))), 'format', 'unknown tag "$evil"');
    expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.stages[0].metrics = { $num: 'Infinite' }))), 'format', 'unknown special number');
    add(expectFail(parseExperimentFile(rewrite(bytes, (h) => delete h.stages[1].steps[0].kl)), 'stages', 'stage record 2 is malformed', 'step 0.kl'));
    expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.stages[0].stage = 7))), 'stages', 'numbered 7, expected 1');
    expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.stages[0].steps[1].agent = 3))), 'stages', 'names agent 3');
    expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.stages[0].metrics['team/J'] = 'high'))), 'stages', 'metric "team/J"');
    add(expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.cursor.stage = 2))), 'cursor', "names agent 1's step of stage 2", 'holds 2 stage records', 'in progress is 3'));
    add(expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.cursor = { stage: 1 }))), 'cursor', 'says 1 stages are finished', 'holds 2'));
    expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.cursor.agent = 3))), 'cursor', 'only 3');
    expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.cursor.step = 1))), 'cursor', 'not {stage, agent?}');
    expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.cursor = 'end'))), 'cursor');
    expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.config.stages = 1))), 'cursor', 'more than its config');
    // Deep nesting is refused, not a stack overflow.
    let deep = '1';
    for (let i = 0; i < 500; i++) deep = `[${deep}]`;
    expectFail(parseExperimentFile(rewrite(bytes, (h) => (h.stages[0].metrics = { x: JSON.parse(deep) }))), 'format', 'nests more than 64');

    expect(new Set(messages).size).toBe(messages.length);
  });

  it('refuses what the fuzzer (tests/fuzz.test.ts) found accepted or garbled, each with its own message', async () => {
    const { bytes } = await sample();
    const edit = (f: (h: any, blobs: Blob64[]) => void) => parseExperimentFile(rewrite(bytes, f));
    // Fields of a stage record beyond the few that used to be checked: types, counts, agents, lengths.
    expectFail(edit((h) => (h.stages[0].steps[0].cert.range[0] = '0')), 'stages', 'stage record 1 is malformed', 'step 0.cert.range[0] is the text "0", expected a number');
    expectFail(edit((h) => (h.stages[1].steps[2].check.ok = 1)), 'stages', 'stage record 2', 'step 2.check.ok is 1, expected true or false');
    expectFail(edit((h) => delete h.stages[0].certificate.episodic.lower), 'stages', 'certificate.episodic.lower is missing, expected a number');
    expectFail(edit((h) => (h.stages[0].steps[1].cert.units += 0.25)), 'stages', 'step 1.cert.units is', 'expected a whole number ≥ 0');
    expectFail(edit((h) => (h.stages[0].steps[1].cert.agent = 1e21)), 'stages', 'step 1.cert.agent names agent 1e+21, not one of 0..2');
    expectFail(edit((h) => (h.stages[1].evaluation.accuracy = 'high')), 'stages', 'evaluation.accuracy is the text "high", expected a number');
    const swap = { agent: 1, incoming: 'best response', stage0: true, delta0: 0.05, klQuantiles: { q50: 0, q90: 0, q99: 0 }, outsideBefore: 0, outsideAfter: 0, lambdaHist: [1, 2, 3], jBefore: 0, jAfter: 0, certRadius: 0, certFloor: 0 };
    expectFail(edit((h) => (h.stages[0].swap = swap)), 'stages', 'swap.lambdaHist is a list of 3, expected a list of 6');
    // What ties a record together: σ and the steps, each step's certificate input.
    expectFail(edit((h) => h.stages[0].order.reverse()), 'stages', "step 0 is agent 0's, but σ puts agent 2 at position 0");
    expectFail(edit((h) => (h.stages[0].steps[0].cert.agent = 1)), 'stages', "its certificate input is agent 1's");
    // The sequential certificate's looks: one a whole round, a running maximum, a stop that fits them.
    const looks = (h: any, lowers: number[], stop: string, maxRounds: number) => {
      const q = h.stages[0].certificate.sequential;
      Object.assign(q, { maxRounds, stop, looks: lowers.map((lower, i) => ({ units: (i + 1) * q.roundUnits, gain: 0.1, lower })) });
      return q;
    };
    expect(parseExperimentFile(rewrite(bytes, (h) => looks(h, [-0.2, -0.1, 0.05], 'certified', 4))).ok).toBe(true);
    expect(parseExperimentFile(rewrite(bytes, (h) => looks(h, [-0.2, -0.1], 'futile', 4))).ok).toBe(true);
    expectFail(edit((h) => looks(h, [-0.2, -0.3], 'futile', 4)), 'stages', "certificate.sequential look 1's bound -0.3 is below the look before it");
    expectFail(edit((h) => (looks(h, [-0.2, 0.1], 'certified', 4).looks[1].units += 1)), 'stages', 'look 1 is after', 'rounds of');
    expectFail(edit((h) => looks(h, [-0.2, 0.1], 'futile', 4)), 'stages', 'stopped "futile" with a last bound of 0.1');
    expectFail(edit((h) => looks(h, [-0.2, -0.1], 'budget', 4)), 'stages', 'stopped at its budget after 2 of 4 rounds');
    expectFail(edit((h) => looks(h, [0.1, 0.2], 'certified', 4)), 'stages', 'drew on after its bound was above 0');
    expectFail(edit((h) => looks(h, [-0.2, -0.1, 0, 0.1, 0.2], 'certified', 4)), 'stages', 'has 5 looks, expected 1 to its 4 rounds');
    // Blobs: each referred to exactly once.
    expectFail(edit((_h, blobs) => blobs.push(new Float64Array(2))), 'format', `blob ${(decodeContainer(bytes) as { value: { blobs: unknown[] } }).value.blobs.length}`, 'is referred to by nothing');
    expectFail(edit((h) => (h.stages[0].steps[0].kl = h.stages[0].steps[1].kl)), 'format', 'header.stages[0].steps[1].kl refers to blob', 'which header.stages[0].steps[0].kl already uses');
    // Non-finite weights and β (training never saves them).
    expectFail(edit((h, blobs) => (blobs[h.agents[1].params.$f64]![3] = NaN)), 'snapshot', "agent 1's parameter 3 is NaN");
    expectFail(edit((h) => (h.betas[2] = { $num: 'Infinity' })), 'agents', "agent 2's β is Infinity");
    // A field nested deep: refused at the depth limit, not the catch-all for a stack overflow.
    const c = decodeContainer(bytes);
    if (!c.ok) throw new Error(c.error);
    const deep = c.value.header.replace('"presetName":"relay"', `"presetName":${'['.repeat(100_000)}${']'.repeat(100_000)}`);
    expectFail(parseExperimentFile(encodeContainer(deep, c.value.blobs)), 'format', 'nests more than 64');
    // A setting that is an object, and an unknown setting with a 100,000-character name (its
    // "did you mean" edit distance took 1.75 s in parseConfig; refused at once here). The message
    // proves which path refused it: the edit-distance path says "Unknown setting", never the key's
    // length — so no clock is needed to know the slow path was not taken.
    expectFail(edit((h) => (h.config.lr = { x: 1 })), 'config', 'setting "lr" is an object');
    const longKey = expectFail(edit((h) => (h.config['y'.repeat(100_000)] = 1)), 'config', 'a key of 100000 characters');
    expect(longKey).not.toContain('Unknown setting');
    // A −0 cursor reads as 0, so that a re-export gives the same value back.
    const r = edit((h) => (h.cursor.agent = { $num: '-0' }));
    if (!r.ok) throw new Error(r.error);
    expect(Object.is(r.value.cursor.agent, 0)).toBe(true);
  });

  it('never throws on random bytes or random damage (seeded)', async () => {
    const { bytes } = await sample();
    const rng = new Rng(78);
    for (let k = 0; k < 200; k++) {
      let b: Uint8Array;
      if (k % 2 === 0) {
        b = Uint8Array.from({ length: rng.int(200) }, () => rng.int(256));
        if (k % 4 === 0) b.set(EXPERIMENT_MAGIC.subarray(0, Math.min(8, b.length)));
      } else {
        b = bytes.slice(0, rng.int(bytes.length + 1));
        for (let j = 0; j < 1 + rng.int(4); j++) if (b.length > 0) b[rng.int(b.length)] = rng.int(256);
      }
      const r = parseExperimentFile(b);
      if (!r.ok) expect(r.error.endsWith(FALLBACK), `case ${k}`).toBe(true);
    }
  });
});
