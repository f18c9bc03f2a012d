/**
 * A session's checkpoint seats: which agents of a language team run a Hugging Face or ONNX folder
 * of their own, the card's choices for the next folder, and the seating kept in storage (hfFiles.ts
 * `CheckpointStore`). A `SeatManager` seats, re-quantizes and clears seats through the session's
 * one-action lock and team swap (`SeatHost`); every team build seats them again, from the bytes
 * kept in memory. It neither steps nor saves the experiment (session.ts, sessionState.ts).
 */
import type { StoreApi } from 'zustand';
import { SatError } from '../core/errors';
import { isLlmTask, type Config } from '../sat/config';
import type { QuantKind } from '../model/quant';
import { checkFits, formatBytes, type MemoryEstimate } from '../model/hfConfig';
import type { SeatCheckpoint } from '../workers/remoteTeam';
import type { SeatSpeed } from '../workers/agentApi';
import { CheckpointStore, describeSeatEstimate, estimateOf, PAGE_SEAT_QUANT, pageSeatLimit, SEAT_QUANTS, readCheckpointFolder, seatContext, SHORT_HASH, folderEntries, type FileLike, type SeatRef } from './hfFiles';
import { onnxFolderFiles, type OnnxSeatMode } from './onnxFiles';
import type { OpenExtras, TeamHandle, TeamOpener } from './team';
import { describeError } from './errorText';
import type { PlaygroundState, Progress, SeatView } from './store';

/** How often a seat card's tokens/s is redrawn at most, ms (a worker tells its speed after every sampling call). */
const SPEED_EVERY_MS = 1000;

/** A seated checkpoint, with what the card shows of it. */
type Seat = SeatCheckpoint & { readonly params: number; stored: number | string; readonly estimate?: string; readonly needs?: string; readonly needsBy?: Readonly<Partial<Record<QuantKind, string>>> };

/** A seat as storage, links and experiment files record it. */
export type SeatRecord = Required<Omit<SeatRef, 'onnx'>> & Pick<SeatRef, 'onnx'>;

/** What the seats need of the session they belong to. */
export interface SeatHost {
  /** Where the seats' views, errors and notices are written. */
  readonly store: StoreApi<PlaygroundState>;
  /** Builds a team (the session's opener). */
  readonly open: TeamOpener;
  /** The progress bar (null hides it). */
  progress(p: Progress | null): void;
  /** Runs `fn` as the session's one action in flight ('loading'); false when another action was running. */
  lock(fn: () => Promise<void>): Promise<boolean>;
  /** A team built with new seats becomes the session's (the old one is dropped). */
  adopt(cfg: Config, t: TeamHandle): Promise<void>;
  /** The team changed under the step listeners (autosave). */
  changed(): void;
}

/** What the card shows of a seat's memory: the estimate for its quantization in words and its total, and the total for each choice. */
async function seatEstimates(files: SeatCheckpoint['files'], cfg: Config, quant: QuantKind, onnx?: SeatCheckpoint['onnx']): Promise<{ estimate: string; needs: string; needsBy: Partial<Record<QuantKind, string>>; total: MemoryEstimate }> {
  const needsBy: Partial<Record<QuantKind, string>> = {};
  let total: MemoryEstimate | undefined;
  const context = await seatContext(files, cfg, onnx); // measured once for the three estimates
  for (const q of SEAT_QUANTS) {
    const e = await estimateOf(files, cfg, q, context, onnx);
    needsBy[q] = formatBytes(e.total);
    if (q === quant) total = e;
  }
  return { estimate: describeSeatEstimate(total!), needs: formatBytes(total!.total), needsBy, total: total! };
}

function recordOf(agent: number, c: Seat): SeatRecord {
  return { agent, name: c.name, hash: c.hash, quant: c.quant, ...(c.onnx ? { onnx: c.onnx } : {}) };
}

export class SeatManager {
  /** Seats on a checkpoint of their own (agent index → folder). */
  private seats = new Map<number, Seat>();
  /** The card's choice of quantization for a seat without a checkpoint yet (the next folder seated there). */
  private chosenQuant = new Map<number, QuantKind>();
  /** The card's choice for the next ONNX folder seated there: trainable (mapped into our model) or frozen (run by onnxruntime-web). */
  private chosenOnnx = new Map<number, OnnxSeatMode>();
  /** The card's choice of graph for the next ONNX folder seated there (absent: a link's, else the folder's first). */
  private chosenOnnxFile = new Map<number, string>();
  /** The .onnx files of the ONNX folder last seated at each agent, when it had more than one (the card's Graph list). */
  private folderGraphs = new Map<number, string[]>();
  /** Seats named (by a link) whose checkpoint this browser does not have. */
  private missing = new Map<number, SeatRef>();
  /** What the next build seats: the stored seating (first build), a link's, or nothing new (null). */
  private wanted: readonly SeatRef[] | 'stored' | null = 'stored';
  /** Cancels the checkpoint load in flight. */
  private abort: AbortController | null = null;
  /** The build whose team is the session's: only its workers' speeds are shown. */
  private liveBuild = 0;
  private builds = 0;
  /** Each seat's sampling so far on the live team (the card's tokens/s). */
  private speeds = new Map<number, SeatSpeed>();
  /** A speed told but not yet written to the store (written at most once per SPEED_EVERY_MS). */
  private speedTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly host: SeatHost,
    /** Where seated checkpoints are kept (IndexedDB in the page; none in Node unless a test gives one). */
    private readonly checkpoints: CheckpointStore | null,
  ) {}

  private get config(): Config | null {
    return this.host.store.getState().config;
  }

  private say(s: Partial<PlaygroundState>): void {
    this.host.store.setState(s);
  }

  /** The seats that apply to `cfg` (a language task with that many agents). */
  private active(cfg: Config, seats: ReadonlyMap<number, Seat>): Map<number, Seat> {
    return new Map(isLlmTask(cfg.task) ? [...seats].filter(([j]) => j < cfg.agents) : []);
  }

  /**
   * The seats' part of a build, and `close()`, called once the build settled: a worker's progress
   * message that arrives later (or after Cancel) is dropped rather than left on screen.
   */
  private extras(cfg: Config, seats: ReadonlyMap<number, Seat>, signal: AbortSignal | null): { extras: OpenExtras; close: () => void; build: number } {
    const active = this.active(cfg, seats);
    let open = true;
    const close = (): void => {
      open = false;
    };
    const build = ++this.builds;
    if (active.size === 0) return { extras: {}, close, build };
    return { close, build, extras: {
      onSpeed: (j, s) => {
        if (build !== this.liveBuild || !active.has(j)) return;
        this.speeds.set(j, s);
        this.speedTimer ??= setTimeout(() => {
          this.speedTimer = null;
          const now = this.config;
          if (build === this.liveBuild && now) this.say({ seats: this.views(now) });
        }, SPEED_EVERY_MS);
      },
      seats: active,
      seatLimit: pageSeatLimit(),
      ...(signal ? { signal } : {}),
      onSeatProgress: (j, p) => {
        if (!open || signal?.aborted) return;
        const seat = active.get(j)!;
        this.host.progress({ label: `Agent ${j} ← ${seat.name}${seat.needs ? ` (needs about ${seat.needs})` : ''}: ${p.phase} ${p.done}/${p.total}${p.item ? ` (${p.item})` : ''}`, done: p.done, total: Math.max(1, p.total), cancellable: signal !== null });
      },
    } };
  }

  /** The seats' part of a plain build (Apply, Reset, a restore) of `cfg`, whose team becomes the session's; `close()` once it settled. */
  buildExtras(cfg: Config): { extras: OpenExtras; close: () => void } {
    const part = this.extras(cfg, this.seats, null);
    this.live(part.build);
    return part;
  }

  /** Build `build`'s team is the session's now: its seats' speeds start from nothing. */
  private live(build: number): void {
    this.liveBuild = build;
    this.speeds = new Map();
  }

  /** What the cards show of the seats that apply to `cfg`, missing ones included. */
  views(cfg: Config): SeatView[] {
    const views: SeatView[] = [...this.active(cfg, this.seats)].map(([agent, c]) => ({ agent, name: c.name, hash: c.hash, quant: c.quant, params: c.params, stored: c.stored, ...(c.onnx ? { onnx: c.onnx } : {}), ...(c.onnx && this.folderGraphs.has(agent) ? { onnxGraphs: this.folderGraphs.get(agent)! } : {}), ...(c.needsBy ? { needsBy: c.needsBy } : {}), ...(c.estimate ? { estimate: c.estimate } : {}), ...(c.needs ? { needs: c.needs } : {}), ...(this.speeds.has(agent) ? { speed: this.speeds.get(agent)! } : {}) }));
    for (const [agent, r] of this.missing) if (isLlmTask(cfg.task) && agent < cfg.agents && !this.seats.has(agent)) views.push({ agent, name: r.name, hash: r.hash, quant: r.quant ?? PAGE_SEAT_QUANT, missing: true, ...(r.onnx ? { onnx: r.onnx } : {}) });
    return views.sort((a, b) => a.agent - b.agent);
  }

  /** The seats a share link names: seated at the next build from this browser's storage, or reported missing. */
  useLinkSeats(refs: readonly SeatRef[]): void {
    this.wanted = refs;
  }

  /** Forgets the seats named but not found (a file without seats keeps the seats, not an earlier file's missing ones). */
  forgetMissing(): void {
    this.missing = new Map();
  }

  /** Whether agent j's seat is named but its checkpoint is not in this browser. */
  isMissing(j: number): boolean {
    return this.missing.has(j);
  }

  /** The checkpoint agent j holds (folder hash and quantization), if any. */
  holding(j: number): { readonly name: string; readonly hash: string; readonly quant: QuantKind } | undefined {
    const s = this.seats.get(j);
    return s && { name: s.name, hash: s.hash, quant: s.quant };
  }

  /** The seats as storage, links and experiment files record them. */
  seating(): SeatRecord[] {
    return [...this.seats].map(([agent, c]) => recordOf(agent, c));
  }

  /** The seats that apply to `cfg` as a save file records them; undefined for a table game. */
  records(cfg: Config): SeatRecord[] | undefined {
    return isLlmTask(cfg.task) ? [...this.active(cfg, this.seats)].map(([agent, c]) => recordOf(agent, c)) : undefined;
  }

  /** Cancels the checkpoint load in flight, if any. */
  cancel(): void {
    this.abort?.abort();
  }

  /** The seats the link / the stored seating asks for, from storage (once per request). */
  async resolve(cfg: Config): Promise<void> {
    const wanted = this.wanted;
    if (wanted === null) return;
    this.wanted = null;
    let refs: readonly SeatRef[] = [];
    if (wanted === 'stored') {
      if (!this.checkpoints) return;
      const r = await this.checkpoints.loadSeating();
      if (!r.ok) {
        this.say({ error: `Seated checkpoints: ${r.error}` });
        return;
      }
      refs = r.value;
    } else refs = wanted;
    this.seats = new Map();
    this.missing = new Map();
    for (const ref of refs) {
      const got = this.checkpoints ? await this.checkpoints.load(ref.hash) : ({ ok: true, value: null } as const);
      if (got.ok && got.value) {
        const quant = ref.quant ?? PAGE_SEAT_QUANT;
        const { total: _, ...shown } = await seatEstimates(got.value.files, cfg, quant, ref.onnx);
        this.seats.set(ref.agent, { ...got.value, quant, stored: got.value.bytes, ...(ref.onnx ? { onnx: ref.onnx } : {}), ...shown });
      }
      else {
        this.missing.set(ref.agent, ref);
        if (!got.ok) this.say({ error: `Agent ${ref.agent}'s checkpoint ${ref.name}: ${got.error}` });
      }
    }
    if (wanted !== 'stored') await this.checkpoints?.saveSeating(this.seating());
  }

  /**
   * A fresh team with these seats, built while the current one stays; on failure or Cancel the
   * current team is kept as it was and the banner says why.
   */
  private async rebuildWith(cfg: Config, seats: Map<number, Seat>, what: string): Promise<boolean> {
    const abort = new AbortController();
    this.abort = abort;
    const part = this.extras(cfg, seats, abort.signal);
    let t: TeamHandle;
    try {
      this.host.progress({ label: `${what}: starting the workers…`, done: 0, total: 1, cancellable: true });
      t = await this.host.open(cfg, (msg) => this.host.progress({ label: msg, done: 0, total: 1, cancellable: true }), part.extras);
    } catch (e) {
      if (e instanceof SatError && e.code === 'cancelled') this.say({ notice: `${what}: cancelled; the team was not changed.` });
      else this.say({ error: `${what}: ${describeError(e, 'The team was not changed.')}` });
      return false;
    } finally {
      this.abort = null;
      part.close();
    }
    this.seats = seats;
    this.live(part.build);
    await this.host.adopt(cfg, t);
    return true;
  }

  private async saveSeating(drop: readonly string[] = []): Promise<void> {
    if (!this.checkpoints) return;
    const r = await this.checkpoints.saveSeating(this.seating(), drop);
    if (!r.ok) this.say({ error: `Seated checkpoints: ${r.error}` });
  }

  /**
   * Seats the checkpoint folder `files` (a picker's or a drop's File list) as agent j of the
   * applied language settings: config.json and the memory estimate first (refused before the
   * weights are read when it does not fit), then the load in the seat's worker, with progress and
   * Cancel, then storage. With `expectHash` (a link's seat) a folder with another hash is refused.
   * `quant`: how its weights are stored (default: what the link or the seat had, else q8).
   * Returns whether agent j now holds it; on failure the team is as it was.
   */
  async seatCheckpoint(j: number, files: readonly FileLike[], expectHash?: string, quant?: QuantKind): Promise<boolean> {
    const cfg = this.config;
    let ok = false;
    await this.host.lock(async () => {
      const what = `Agent ${j}'s checkpoint`;
      if (!cfg || !isLlmTask(cfg.task) || j < 0 || j >= cfg.agents) {
        this.say({ error: `${what}: a checkpoint can take a seat of a language team (agents 0..${(cfg?.agents ?? 1) - 1}); the team was not changed.` });
        return;
      }
      let c;
      try {
        this.host.progress({ label: `${what}: reading config.json…`, done: 0, total: 1, cancellable: false });
        const q = quant ?? this.chosenQuant.get(j) ?? this.missing.get(j)?.quant ?? this.seats.get(j)?.quant ?? PAGE_SEAT_QUANT;
        const mode = this.chosenOnnx.get(j) ?? this.missing.get(j)?.onnx?.mode ?? this.seats.get(j)?.onnx?.mode ?? 'trainable';
        const graph = this.chosenOnnxFile.get(j) ?? this.missing.get(j)?.onnx?.file;
        c = await readCheckpointFolder(files, cfg, pageSeatLimit(), (done, total) => this.host.progress({ label: `${what}: reading file ${done} of ${total}`, done, total, cancellable: false }), q, mode, graph);
        if (expectHash !== undefined && c.hash !== expectHash) {
          const want = this.missing.get(j);
          throw new SatError('checkpoint', `this folder is ${c.name} (hash ${c.hash.slice(0, SHORT_HASH)}…), not the checkpoint the link needs${want ? `, ${want.name}` : ''} (hash ${expectHash.slice(0, SHORT_HASH)}…); pick that folder.`);
        }
      } catch (e) {
        this.say({ error: `${what}: ${describeError(e, 'The team was not changed.')}` });
        return;
      }
      const { total: _, ...shown } = await seatEstimates(c.files, cfg, c.quant, c.onnx);
      const seat: Seat = { name: c.name, hash: c.hash, files: c.files, quant: c.quant, params: c.params, stored: 'not stored', ...(c.onnx ? { onnx: c.onnx } : {}), ...shown };
      const next = new Map(this.seats);
      const previous = next.get(j)?.hash;
      next.set(j, seat);
      if (!(await this.rebuildWith(cfg, next, `Agent ${j} ← ${c.name}`))) return;
      this.missing.delete(j);
      if (this.checkpoints) {
        const saved = await this.checkpoints.save(c);
        seat.stored = saved.ok ? saved.value : saved.error;
        await this.saveSeating(previous ? [previous] : []);
      } else seat.stored = 'this page has no storage';
      const graphs = c.onnx ? onnxFolderFiles(folderEntries(files).entries.keys()) : [];
      if (graphs.length > 1) this.folderGraphs.set(j, graphs);
      else this.folderGraphs.delete(j);
      const others = graphs.filter((g) => g !== c.onnx?.file);
      const also = others.length > 0 ? ` Its folder also has ${others.join(', ')}: choose one under Graph and pick the folder again to seat it instead.` : '';
      this.host.changed();
      this.say({ seats: this.views(cfg), error: null, notice: `Agent ${j} is now ${c.name}${c.onnx ? ` (${c.onnx.file}, ${c.onnx.mode})` : ''} (${seat.params.toLocaleString('en')} parameters, ${c.quant}, ${seat.estimate}).${also}` });
      ok = true;
    });
    return ok;
  }

  /** The card's frozen / trainable choice for the next ONNX folder seated at agent j (a seated folder keeps its mode: pick it again to change it). */
  chooseOnnxMode(j: number, mode: OnnxSeatMode): void {
    this.chosenOnnx.set(j, mode);
  }

  /** The card's choice of graph for the next ONNX folder seated at agent j (a seated folder keeps its graph: pick the folder again to change it). */
  chooseOnnxFile(j: number, file: string): void {
    this.chosenOnnxFile.set(j, file);
  }

  /** The card's quantization choice: re-seats agent j's checkpoint so (setSeatQuant), or is kept for the next folder seated there. */
  async chooseSeatQuant(j: number, quant: QuantKind): Promise<boolean> {
    this.chosenQuant.set(j, quant);
    return this.seats.has(j) ? this.setSeatQuant(j, quant) : false;
  }

  /**
   * Agent j's checkpoint stored as `quant` instead: re-estimated for the applied settings and
   * refused (the team unchanged) when it does not fit, else a fresh team with that seat, recorded
   * in the storage's seating. Returns whether agent j now holds it so.
   */
  async setSeatQuant(j: number, quant: QuantKind): Promise<boolean> {
    const cfg = this.config;
    const seat = this.seats.get(j);
    if (!cfg || !seat || seat.quant === quant) return false;
    let ok = false;
    await this.host.lock(async () => {
      const what = `Agent ${j}'s checkpoint as ${quant}`;
      let next: Seat;
      try {
        const { total, ...shown } = await seatEstimates(seat.files, cfg, quant, seat.onnx);
        checkFits(total, pageSeatLimit().bytes, pageSeatLimit().where);
        next = { ...seat, quant, ...shown };
      } catch (e) {
        this.say({ error: `${what}: ${describeError(e, 'The team was not changed.')}` });
        return;
      }
      if (!(await this.rebuildWith(cfg, new Map(this.seats).set(j, next), `Agent ${j} ← ${seat.name} (${quant})`))) return;
      await this.saveSeating();
      this.host.changed();
      this.say({ seats: this.views(cfg), error: null, notice: `Agent ${j} is now ${seat.name} stored ${quant} (${next.estimate}).` });
      ok = true;
    });
    return ok;
  }

  /** Agent j back on the shipped model (a fresh team). */
  async clearCheckpoint(j: number): Promise<void> {
    const cfg = this.config;
    if (!cfg || (!this.seats.has(j) && !this.missing.has(j))) return;
    await this.host.lock(async () => {
      const next = new Map(this.seats);
      const previous = next.get(j)?.hash;
      next.delete(j);
      this.missing.delete(j);
      if (await this.rebuildWith(cfg, next, `Agent ${j} back on ${cfg.task}-${cfg.model}`)) {
        await this.saveSeating(previous ? [previous] : []);
        this.host.changed();
      }
    });
  }
}
