/**
 * Autosave: whenever the session tells of a step (after every agent step, or once a stage under
 * Step stage and Run: session.ts `onStep`) it is kept in a PartStore (persist.ts; IndexedDB in the
 * page) so a reload restores it — written in parts (savefile.ts containers), so a step's cost does
 * not grow with the history. Every write is one setMany, all or nothing; the manifest names how
 * many stage parts belong to the experiment, so a leftover part is never read. Earlier versions'
 * one whole file ("current") is refused with a message saying so.
 *
 *   manifest     { format, version: 2, stages: k, savedAt }
 *   head         config, preset, date, cursor, seats' checkpoints — rewritten every save
 *   boundary     agents and β after stage k                       — rewritten when a stage finishes
 *   stage:<i>    stage i's record, i = 1..k                        — written once
 *
 * Not here: storage and its errors (persist.ts), the bytes (savefile.ts), start-up (boot.ts).
 */
import * as v from 'valibot';
import { count } from '../core/schema';
import { parseExperimentFile, parseParts, serializeBoundary, serializeHead, serializeStage, type ExperimentData } from './savefile';
import { guarded, unreadable, type PartStore } from './persist';
import type { Session } from './session';
import { fileDataOf, type Boundary } from './sessionState';
import type { StageRecord } from '../sat/stage';

export const AUTOSAVE_FORMAT = 'sat-playground-autosave';
export const AUTOSAVE_VERSION = 2;
/** The key of stage i's part. */
export const stageKey = (i: number): string => `stage:${i}`;
/** Where earlier versions kept their one autosave file. */
const LEGACY_KEY = 'current';

export type AutosaveLoad =
  | { readonly ok: true; readonly data: ExperimentData | null }
  /** `stored`: the store answered and holds something unreadable (boot clears it); else the store failed. */
  | { readonly ok: false; readonly error: string; readonly stored: boolean };

/** The manifest: which autosave format, and how many stage parts belong to the experiment. */
const manifestSchema = v.object({
  format: v.literal(AUTOSAVE_FORMAT),
  version: v.literal(AUTOSAVE_VERSION),
  stages: v.pipe(count, v.maxValue(1e6)),
  savedAt: v.string(),
});
type Manifest = v.InferOutput<typeof manifestSchema>;

/** Calls `fn` in a task of its own, soon: a MessageChannel message, which a background tab does not throttle. */
function nextTask(fn: () => void): void {
  const ch = new MessageChannel();
  ch.port1.onmessage = () => {
    ch.port1.close();
    fn();
  };
  ch.port2.postMessage(null);
}

/**
 * Calls `fn` once the browser has drawn what is on screen now: a task after the next animation
 * frame, so a step's serialising and compressing runs after its picture is painted instead of
 * before; a timer too, in case no frame comes (the tab hidden meanwhile). Whichever comes first
 * runs `fn`. A hidden tab draws nothing: the next task. Without `requestAnimationFrame` (Node): a timer.
 */
function afterPaint(fn: () => void): void {
  if (typeof requestAnimationFrame !== 'function') {
    setTimeout(fn, 0);
    return;
  }
  if (typeof document !== 'undefined' && document.hidden) {
    nextTask(fn);
    return;
  }
  let done = false;
  const run = () => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    fn();
  };
  const timer = setTimeout(run, AFTER_PAINT_LIMIT_MS);
  requestAnimationFrame(() => nextTask(run));
}

/** The longest a step's save waits for the browser to draw, ms (a throttled or hidden tab). */
const AFTER_PAINT_LIMIT_MS = 100;

export class Autosave {
  /** A save is asked for and waits for the browser to draw (`schedule`). */
  private scheduled = false;
  private saving = false;
  private again = false;
  private reported = false;
  /** The stage records and boundary the store holds for this experiment; null: nothing written by this page yet. */
  private written: { stages: readonly StageRecord[]; boundary: Boundary; createdAt: string } | null = null;
  private lastHead: Uint8Array | null = null;
  /** Writes made and bytes handed to the store (the cost of autosaving; tests read it). */
  readonly stats = { writes: 0, bytes: 0 };

  constructor(
    private readonly session: Session,
    private readonly store: PartStore,
  ) {}

  /**
   * Saves after every agent step the session records, once the browser has drawn it (`schedule`);
   * returns the unsubscribe. A page being hidden or left saves what waits at once.
   */
  attach(): () => void {
    const off = this.session.onStep(() => this.schedule());
    if (typeof document === 'undefined' || typeof addEventListener !== 'function') return off;
    const now = () => this.flush();
    const onHidden = () => {
      if (document.visibilityState === 'hidden') now();
    };
    document.addEventListener('visibilitychange', onHidden);
    addEventListener('pagehide', now);
    return () => {
      off();
      document.removeEventListener('visibilitychange', onHidden);
      removeEventListener('pagehide', now);
    };
  }

  /**
   * Asks for a save after the browser has drawn the step (`afterPaint`): the step's picture is not
   * held up by serialising it. Steps told before it runs are saved together (it reads the session
   * as it then is), so the last one is never lost; `settled` waits for it.
   */
  schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    afterPaint(() => void this.saveScheduled());
  }

  private async saveScheduled(): Promise<void> {
    if (!this.scheduled) return;
    this.scheduled = false;
    await this.save();
  }

  /**
   * The page is being hidden or left: the save that waits is handed to the store at once, even
   * beside a write in flight (waiting for that one could outlast the page). Each write is one
   * transaction computed as it starts, so IndexedDB lands the two in order and the newer one last.
   * (What `attach` calls on pagehide and on the page turning hidden.)
   */
  flush(): void {
    if (!this.scheduled) return;
    this.scheduled = false;
    if (!this.saving) {
      void this.save();
      return;
    }
    void this.writeOnce(true).then((error) => this.report(error));
  }

  /** Saves now, or right after the save in flight (never two at once, never a stale one last). */
  async save(): Promise<void> {
    if (this.saving) {
      this.again = true;
      return;
    }
    this.saving = true;
    try {
      do {
        this.again = false;
        this.report(await this.writeOnce());
      } while (this.again);
    } finally {
      this.saving = false;
    }
  }

  /** Says a failed write once, not after every step; a write that works clears that. */
  private report(error: string | null): void {
    if (error && !this.reported) {
      this.reported = true;
      this.session.store.setState({ error: `Autosave failed: ${error}` });
    }
    if (!error) this.reported = false;
  }

  /** Resolves when no save is asked for or in flight (tests wait on it before reloading). */
  async settled(): Promise<void> {
    while (this.scheduled || this.saving) await new Promise((r) => setTimeout(r, 10));
  }

  /**
   * Writes what changed since the last write, as the session is when the store takes the write
   * (after the calls queued before it; `now`: at once); returns the error message, or null.
   */
  private async writeOnce(now = false): Promise<string | null> {
    const r = await guarded(
      'autosave the experiment',
      async (): Promise<{ entries: [string, unknown][]; wrote: NonNullable<Autosave['written']>; head: Uint8Array } | null> => {
        const s = this.session.sessionState();
        if (!s) return null;
        const w = this.written;
        const k = s.stages.length;
        const continues = w !== null && w.stages.length <= k && w.stages.every((r, i) => s.stages[i] === r) && (w.stages.length < k || w.boundary === s.boundary);
        const createdAt = continues ? w.createdAt : new Date().toISOString();
        const entries: [string, unknown][] = [];
        if (!continues || w.boundary !== s.boundary) {
          const data = fileDataOf(s, this.session.store.getState().agents, createdAt);
          entries.push(['boundary', serializeBoundary(data)]);
          for (const rec of s.stages.slice(continues ? w.stages.length : 0)) entries.push([stageKey(rec.stage), serializeStage(rec)]);
        }
        const head = serializeHead({ config: s.config, presetName: s.preset, createdAt, cursor: s.cursor, ...(s.checkpoints ? { checkpoints: s.checkpoints } : {}) });
        if (entries.length === 0 && this.lastHead && sameBytes(head, this.lastHead)) return null;
        const manifest: Manifest = { format: AUTOSAVE_FORMAT, version: AUTOSAVE_VERSION, stages: k, savedAt: new Date().toISOString() };
        entries.push(['head', head], ['manifest', manifest]);
        // A new experiment drops an earlier one's parts (never read: the manifest says how many stages there are) to free the space.
        const stale = (key: string) => key === LEGACY_KEY || (key.startsWith('stage:') && !(Number(key.slice(6)) <= k));
        await this.store.setMany(entries, continues ? undefined : stale);
        return { entries, wrote: { stages: s.stages, boundary: s.boundary, createdAt }, head };
      },
      now,
    );
    if (!r.ok) return r.error;
    const d = r.value;
    if (!d) return null;
    this.written = d.wrote;
    this.lastHead = d.head;
    this.stats.writes++;
    for (const [, v] of d.entries) this.stats.bytes += v instanceof Uint8Array ? v.length : JSON.stringify(v).length;
    return null;
  }

  /** The autosaved experiment (checked as a file is), null when there is none. */
  async load(): Promise<AutosaveLoad> {
    type Found = { kind: 'none' } | { kind: 'legacy'; value: unknown } | { kind: 'bad-manifest' } | { kind: 'parts'; parts: unknown[] };
    const r = await guarded('read the autosaved experiment', async (): Promise<Found> => {
      const keys = await this.store.keys();
      if (!keys.includes('manifest')) return keys.includes(LEGACY_KEY) ? { kind: 'legacy', value: await this.store.get(LEGACY_KEY) } : { kind: 'none' };
      const manifest = await this.store.get('manifest');
      if (!isManifest(manifest)) return { kind: 'bad-manifest' };
      return { kind: 'parts', parts: await this.store.getMany(['head', 'boundary', ...Array.from({ length: manifest.stages }, (_, i) => stageKey(i + 1))]) };
    });
    if (!r.ok) return { ok: false, error: r.error, stored: false };
    const got = r.value;
    if (got.kind === 'none') return { ok: true, data: null };
    if (got.kind === 'legacy') {
      const bytes = (got.value as { bytes?: unknown } | undefined)?.bytes;
      const file = bytes instanceof Uint8Array ? parseExperimentFile(bytes) : null;
      return { ok: false, stored: true, error: file && !file.ok ? file.error : unreadable('an autosave of an older version of the playground') };
    }
    if (got.kind === 'bad-manifest') return { ok: false, stored: true, error: unreadable(`its manifest is not {format: "${AUTOSAVE_FORMAT}", version: ${AUTOSAVE_VERSION}, stages}`) };
    const names = ['head', 'boundary', ...got.parts.slice(2).map((_, i) => stageKey(i + 1))];
    const missing = got.parts.findIndex((p) => !(p instanceof Uint8Array));
    if (missing >= 0) return { ok: false, stored: true, error: unreadable(`its part "${names[missing]}" is ${got.parts[missing] === undefined ? 'missing' : 'not bytes'}`) };
    const [head, boundary, ...stages] = got.parts as Uint8Array[];
    const data = parseParts(head!, boundary!, stages);
    if (!data.ok) return { ok: false, stored: true, error: data.error };
    return { ok: true, data: data.value };
  }

  /** Forgets the autosave (every key of the store); a save asked for and not yet begun is dropped. */
  async clear(): Promise<string | null> {
    this.scheduled = false;
    const r = await guarded('clear the autosaved experiment', async () => this.store.delMany(await this.store.keys()));
    this.written = null;
    this.lastHead = null;
    return r.ok ? null : r.error;
  }
}

function isManifest(m: unknown): m is Manifest {
  return v.is(manifestSchema, m);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
