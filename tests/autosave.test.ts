/**
 * Tests for the autosave (src/app/autosave.ts over src/app/persist.ts), in Node with an in-memory
 * PartStore (tests/helpers/memoryStore.ts; the browser e2e test covers IndexedDB).
 *
 * A climbing team (the preset, 201 stages, seed 1) is stepped 200 stages and one agent step with
 * the autosave attached; a fresh session over a fresh store then reads the same PartStore, as a
 * reload would, and restores: every record of every stage equals the original exactly (every
 * metric, wall-clock ones included, since they are stored), the cursor's partial step is replayed to
 * the same agent and J, and stepping on matches the uninterrupted run. The bytes written per
 * finished stage are printed and must stay flat (the last ten stages cost no more than 1.5× the
 * first ten): a stage's record is written once, not the whole history after every step.
 *
 * A step's save runs in a task after the step (after the browser has drawn it, in the page), so
 * steps told before it are written together and the last one is never left out. Under Run and Step
 * stage the session tells a stage once, at its end (or when Run stops inside it).
 *
 * Failures, each with its message: no IndexedDB (save, load and clear), a full disk (said once), a
 * missing or damaged stage part, a manifest that is not this version's, an older version's
 * one-file autosave. A new experiment rewrites the store and drops the old parts.
 *
 * A page left (pagehide) while a write is in flight hands the waiting save to the store at once
 * (tests/helpers/memoryStore.ts's HeldStore holds the writes and runs them in order, as IndexedDB
 * does): both land, the newer last, and a new experiment's write drops its stale parts in its own
 * write, never the parts of the write beside it.
 *
 * Not here: the parts' format (tests/savefile.test.ts checks the same validator on whole files).
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { Autosave, stageKey } from '../src/app/autosave';
import { browserStore } from '../src/app/persist';
import { serializeExperiment } from '../src/app/savefile';
import { Session } from '../src/app/session';
import { fileDataOf, sessionOfFile } from '../src/app/sessionState';
import { createPlaygroundStore } from '../src/app/store';
import { createTabularExperiment, runStages } from '../src/sat/experiment';
import { presetConfig } from '../src/sat/presets';
import type { StageRecord } from '../src/sat/stage';
import { exactDiff } from './helpers/exactDiff';
import { HeldStore, MemoryStore } from './helpers/memoryStore';

const STAGES = 200;

function strip(recs: readonly StageRecord[]) {
  return recs.map((r) => ({ ...r, metrics: Object.fromEntries(Object.entries(r.metrics).filter(([k]) => !k.startsWith('perf/'))) }));
}

function page(kv: MemoryStore): { session: Session; autosave: Autosave } {
  const session = new Session(createPlaygroundStore());
  const autosave = new Autosave(session, kv);
  autosave.attach();
  return { session, autosave };
}

async function restore(session: Session, autosave: Autosave): Promise<void> {
  const r = await autosave.load();
  if (!r.ok) throw new Error(r.error);
  if (!r.data) throw new Error('nothing autosaved');
  await session.restoreSession(sessionOfFile(r.data), 'reload');
}

describe('autosave', () => {
  it(`a reload after ${STAGES} stages restores exactly, and each stage costs about the same to save`, async () => {
    const cfg = presetConfig('climbing', { stages: STAGES + 1 });
    const kv = new MemoryStore();
    const a = page(kv);
    await a.session.openConfig(cfg, 'climbing', 'test');
    const perStage: number[] = [];
    for (let k = 0; k < STAGES; k++) {
      const before = a.autosave.stats.bytes;
      await a.session.stepStage();
      await a.autosave.settled();
      perStage.push(a.autosave.stats.bytes - before);
    }
    await a.session.stepAgent();
    await a.autosave.settled();
    const want = a.session.store.getState();
    expect(want.stages).toHaveLength(STAGES);
    expect(want.partial).toHaveLength(1);

    const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
    const first = mean(perStage.slice(1, 11)); // stage 1's write is the experiment's first, written whole
    const last = mean(perStage.slice(-10));
    const whole = serializeExperiment(fileDataOf(a.session.sessionState()!, want.agents, 'now')).length;
    console.log(
      `[autosave] bytes written per stage (3 agent steps): stages 2–11 ${first.toFixed(0)}, stages ${STAGES - 9}–${STAGES} ${last.toFixed(0)}, ` +
        `mean ${mean(perStage).toFixed(0)}; the whole file at stage ${STAGES} is ${whole} bytes (a rewrite after every step would cost ${3 * whole} a stage)`,
    );
    expect(last).toBeLessThan(1.5 * first);
    expect(last).toBeLessThan(whole);

    // The reload: a fresh session and store, the same PartStore.
    const b = page(kv);
    await restore(b.session, b.autosave);
    const got = b.session.store.getState();
    expect(exactDiff(got.stages, want.stages)).toBeNull();
    expect(got.partial.map((p) => [p.agent, p.jAfter])).toEqual(want.partial.map((p) => [p.agent, p.jAfter]));
    expect(b.session.sessionState()!.cursor).toEqual(a.session.sessionState()!.cursor);
    expect(exactDiff(b.session.sessionState()!.boundary.snapshots, a.session.sessionState()!.boundary.snapshots)).toBeNull();
    await b.session.stepStage();
    expect(strip(b.session.store.getState().stages)).toEqual(strip(await runStages(createTabularExperiment(cfg), STAGES + 1)));
  }, 120_000);

  it('stepping on after a reload matches the run that never stopped', async () => {
    const cfg = presetConfig('climbing', { stages: 6 });
    const kv = new MemoryStore();
    const a = page(kv);
    await a.session.openConfig(cfg, 'climbing', 'test');
    await a.session.stepStage();
    await a.session.stepStage();
    await a.session.stepAgent();
    await a.autosave.settled();
    const b = page(kv);
    await restore(b.session, b.autosave);
    for (let k = 0; k < 4; k++) await b.session.stepStage();
    expect(strip(b.session.store.getState().stages)).toEqual(strip(await runStages(createTabularExperiment(cfg), 6)));
    await b.autosave.settled();
    // The rebuilt page's autosave now holds the finished run.
    const c = page(kv);
    await restore(c.session, c.autosave);
    expect(exactDiff(c.session.store.getState().stages, b.session.store.getState().stages)).toBeNull();
  });

  it('a new experiment rewrites the store and drops the parts it no longer has', async () => {
    const kv = new MemoryStore();
    const a = page(kv);
    await a.session.openConfig(presetConfig('climbing', { stages: 6 }), 'climbing', 'test');
    for (let k = 0; k < 4; k++) await a.session.stepStage();
    await a.autosave.settled();
    expect(kv.map.has(stageKey(4))).toBe(true);
    await a.session.reset();
    await a.session.stepStage();
    await a.autosave.settled();
    expect([...kv.map.keys()].sort()).toEqual(['boundary', 'head', 'manifest', stageKey(1)]);
    const b = page(kv);
    await restore(b.session, b.autosave);
    expect(exactDiff(b.session.store.getState().stages, a.session.store.getState().stages)).toBeNull();
  });

  it('a step is saved in a task after it, not inside it; steps told before that save are saved together, the last one included', async () => {
    const cfg = presetConfig('climbing', { stages: 4 });
    const kv = new MemoryStore();
    const a = page(kv);
    await a.session.openConfig(cfg, 'climbing', 'test');
    await a.session.stepStage();
    await a.autosave.settled();
    const before = a.autosave.stats.writes;
    expect(before).toBeGreaterThan(0);
    // The step returns with its save asked for, not yet run: nothing serialised inside the step.
    await a.session.stepAgent();
    expect(a.autosave.stats.writes).toBe(before);
    await a.session.stepAgent();
    expect(a.autosave.stats.writes).toBe(before);
    await a.autosave.settled();
    // Both steps in one write, which holds the second (the session as it was when the save ran).
    expect(a.autosave.stats.writes).toBe(before + 1);
    const b = page(kv);
    await restore(b.session, b.autosave);
    expect(b.session.sessionState()!.cursor).toEqual({ stage: 2, agent: a.session.store.getState().partial[1]!.agent });
    expect(b.session.store.getState().partial).toHaveLength(2);
  });
  it('under Run and Step stage a stage is told (and saved) once, at its end; a Run paused inside a stage tells its last step when it stops', async () => {
    const cfg = presetConfig('climbing', { stages: 8 });
    const kv = new MemoryStore();
    const a = page(kv);
    await a.session.openConfig(cfg, 'climbing', 'test');
    await a.autosave.settled();
    let told = 0;
    a.session.onStep(() => told++);
    a.session.store.setState({ speed: 'normal' }); // every agent step drawn as it is made
    const run = a.session.play();
    while (a.session.store.getState().stages.length < 2) await new Promise((r) => setTimeout(r, 5));
    a.session.pause();
    await run;
    const s = a.session.store.getState();
    expect(s.stages.length).toBeGreaterThanOrEqual(2);
    // One tell a finished stage, one for the stage Run left unfinished (not one per agent step).
    const afterRun = s.stages.length + (s.partial.length > 0 ? 1 : 0);
    expect(told).toBe(afterRun);
    // Step stage finishes the stage (the rest of it, or a whole one): one tell, at its end.
    await a.session.stepStage();
    expect(a.session.store.getState().partial).toHaveLength(0);
    expect(told).toBe(afterRun + 1);
    await a.autosave.settled();
    const b = page(kv);
    await restore(b.session, b.autosave);
    expect(b.session.sessionState()!.cursor).toEqual(a.session.sessionState()!.cursor);
    expect(b.session.store.getState().stages).toHaveLength(a.session.store.getState().stages.length);
  });
});

describe('autosave when the page is left', () => {
  async function until(ok: () => boolean): Promise<void> {
    for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 2));
    expect(ok()).toBe(true);
  }

  it('a page left while a write is in flight hands its last step to the store at once; both land, the newer last', async () => {
    const kv = new HeldStore();
    const a = page(kv);
    await a.session.openConfig(presetConfig('climbing', { stages: 4 }), 'climbing', 'test');
    await a.session.stepStage();
    await a.autosave.settled();
    kv.hold(); // the store is slow: writes wait
    onTestFinished(() => kv.release()); // the store's queue is the page's: never leave it held
    const before = kv.calls;
    await a.session.stepAgent();
    await until(() => kv.calls === before + 1); // the step's write is in flight
    await a.session.stepAgent();
    a.autosave.flush(); // pagehide
    await new Promise((r) => setTimeout(r, 0));
    expect(kv.calls).toBe(before + 2); // handed over now, not after the write in flight
    kv.release();
    await a.autosave.settled();
    await new Promise((r) => setTimeout(r, 0));
    const b = page(kv);
    await restore(b.session, b.autosave);
    expect(b.session.sessionState()!.cursor).toEqual(a.session.sessionState()!.cursor);
    expect(b.session.store.getState().partial).toHaveLength(2);
  });

  it("a new experiment's write in flight does not drop the parts of the write handed over beside it", async () => {
    const kv = new HeldStore();
    const a = page(kv);
    await a.session.openConfig(presetConfig('climbing', { stages: 6 }), 'climbing', 'test');
    for (let k = 0; k < 4; k++) await a.session.stepStage();
    await a.autosave.settled();
    await a.session.reset();
    await a.autosave.settled();
    kv.hold();
    onTestFinished(() => kv.release());
    const before = kv.calls;
    await a.session.stepStage(); // the new experiment's first write: drops stages 2–4 of the old one
    await until(() => kv.calls === before + 1);
    await a.session.stepStage();
    a.autosave.flush();
    await new Promise((r) => setTimeout(r, 0));
    expect(kv.calls).toBe(before + 2);
    kv.release();
    await a.autosave.settled();
    await new Promise((r) => setTimeout(r, 0));
    expect([...kv.map.keys()].sort()).toEqual(['boundary', 'head', 'manifest', stageKey(1), stageKey(2)]);
    const b = page(kv);
    await restore(b.session, b.autosave);
    expect(exactDiff(b.session.store.getState().stages, a.session.store.getState().stages)).toBeNull();
  });
});

describe('autosave failures', () => {
  async function saved(): Promise<MemoryStore> {
    const kv = new MemoryStore();
    const a = page(kv);
    await a.session.openConfig(presetConfig('relay', { stages: 4 }), 'relay', 'test');
    for (let k = 0; k < 3; k++) await a.session.stepStage();
    await a.autosave.settled();
    return kv;
  }

  it('without IndexedDB (Node, private mode): messages instead of throws', async () => {
    expect(typeof (globalThis as { indexedDB?: unknown }).indexedDB).toBe('undefined');
    const session = new Session(createPlaygroundStore());
    const autosave = new Autosave(session, browserStore());
    autosave.attach();
    await session.openConfig(presetConfig('relay', { stages: 3 }), 'relay', 'test');
    await session.stepAgent();
    await autosave.settled();
    expect(session.store.getState().error).toMatch(/^Autosave failed: .*no IndexedDB storage.*Export experiment/);
    const l = await autosave.load();
    expect(!l.ok && l.error).toMatch(/cannot read the autosaved experiment/);
    expect(!l.ok && l.stored).toBe(false);
    expect(await autosave.clear()).toMatch(/cannot clear the autosaved experiment/);
  });

  it('a full disk is said once, with what to do; the next save that works clears it', async () => {
    const kv = new MemoryStore();
    const a = page(kv);
    await a.session.openConfig(presetConfig('relay', { stages: 4 }), 'relay', 'test');
    kv.failNext = new DOMException('The quota has been exceeded.', 'QuotaExceededError');
    await a.session.stepAgent();
    await a.autosave.settled();
    expect(a.session.store.getState().error).toMatch(/^Autosave failed: The browser refused to autosave the experiment: its storage for this site is full\. .*Export experiment/);
    a.session.store.setState({ error: null });
    await a.session.stepAgent();
    await a.autosave.settled();
    expect(a.session.store.getState().error).toBeNull();
    expect(kv.map.has('head')).toBe(true);
  });

  it('a missing or damaged part, a foreign manifest, an older version: each its message', async () => {
    const missing = await saved();
    missing.map.delete(stageKey(2));
    const r1 = await page(missing).autosave.load();
    expect(!r1.ok && r1.stored && r1.error).toMatch(/not in a form this playground reads \(its part "stage:2" is missing\)/);

    const damaged = await saved();
    const part = (damaged.map.get(stageKey(3)) as Uint8Array).slice();
    part[part.length - 5] = part[part.length - 5]! ^ 0x10;
    damaged.map.set(stageKey(3), part);
    const r2 = await page(damaged).autosave.load();
    expect(!r2.ok && r2.stored && r2.error).toMatch(/^This experiment file cannot be opened: checksum mismatch/);

    const swapped = await saved();
    swapped.map.set(stageKey(1), swapped.map.get(stageKey(2)));
    const r3 = await page(swapped).autosave.load();
    expect(!r3.ok && r3.error).toMatch(/stage record 1 is malformed: it is numbered 2, expected 1/);

    const foreign = await saved();
    foreign.map.set('manifest', { format: 'sat-playground-autosave', version: 3, stages: 3 });
    const r4 = await page(foreign).autosave.load();
    expect(!r4.ok && r4.error).toMatch(/its manifest is not \{format: "sat-playground-autosave", version: 2, stages\}/);

    const legacy = new MemoryStore();
    const old = new Uint8Array(64);
    old.set([0x89, 0x53, 0x41, 0x54, 0x0d, 0x0a, 0x1a, 0x0a, 1, 0, 0, 0]);
    legacy.map.set('current', { bytes: old, savedAt: '2026-11-01T00:00:00.000Z' });
    const r5 = await page(legacy).autosave.load();
    expect(!r5.ok && r5.stored && r5.error).toMatch(/from an older version of the playground/);

    const empty = await page(new MemoryStore()).autosave.load();
    expect(empty).toEqual({ ok: true, data: null });
  });
});
