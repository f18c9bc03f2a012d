/**
 * A team whose agents live in Web Workers, one worker per agent (the worker boundary is where the
 * parameters are: an agent's whole update — train epochs, monitor, retries, geometry — is ONE
 * call to its worker, `update` (src/sat/update.ts), and parameter-sized vectors never cross it in
 * the loop): the main thread keeps the stage loop (src/sat/stage.ts), the environment and the
 * rollouts (turn by turn) and drives each agent through its typed `Remote<AgentApi>`; each worker
 * owns its model, optimizer and backend.
 *
 *   const exp = await createRemoteExperiment(cfg, { makeWorker: makeAgentWorker, load });
 *   await runStages(exp, 3);          // the same functions as an in-process experiment
 *   exp.infos[j].backend              // "cpu (TypeScript)": what the page shows per agent
 *   exp.terminate();
 *
 * Same config ⇒ the same numbers as createTabularExperiment / createLlmExperiment in-process (bit for
 * bit: the agents are built from the same descriptions, see experiment.ts `planTabular`), so a
 * share link replays a run wherever its agents ran (timings aside).
 *
 * Crossing the boundary: arguments are cloned (the stage loop keeps using its batches and
 * snapshots); results come back transferred (src/workers/wire.ts). Every agent counts the calls
 * it made to its worker, per method (`calls`), which is how tests/workers.test.ts holds an agent
 * step to the rollout turns plus a small constant. A worker that dies rejects every pending and
 * later call with an AgentWorkerError naming the agent — never a hang.
 *
 * Not here: the agent (src/workers/agentApi.ts), the store and buttons that use this (src/app).
 */
import { proxy, transfer, wrap, type Endpoint, type Remote } from 'comlink';
import { ConfigError, SatError } from '../core/errors';
import type { HfFiles, HfProgress } from '../model/hfLoad';
import type { QuantKind } from '../model/quant';
import { hfSeatBudget, hfSeatSeed } from '../sat/hfSeatLimits';
import { Rng } from '../core/rng';
import { planLlm, planTabular, type Experiment, type ModelLoader, type TableAgent, type TableExperiment } from '../sat/experiment';
import { isLlmTask, type Config } from '../sat/config';
import type { TabularEnv } from '../sat/env/tabular';
import type { LmAgentPolicy } from '../sat/agents/lm';
import type { LmEnv, TextSpeaker } from '../sat/env/lm';
import type { AgentInfo } from '../sat/types';
import type { AgentApi, AgentSpec, SeatSpeed } from './agentApi';
import { inProcess, type Check } from './budget';
import { AgentWorkerError } from './errors';
import { installErrorTransfer } from './wire';

/**
 * What a RemoteAgent needs from a worker: a comlink endpoint, word of its death, and a way to end
 * it. `browserWorker` adapts a DOM Worker; Node's worker_threads are adapted the same way in
 * tests/helpers/nodeAgentWorker.ts.
 */
export interface AgentWorker {
  readonly endpoint: Endpoint;
  /** `cb` runs once when the worker can no longer answer (an uncaught error, a failed load, an exit). */
  onDeath(cb: (why: string) => void): void;
  terminate(): void;
}

/** A DOM Worker as an AgentWorker. */
export function browserWorker(w: Worker): AgentWorker {
  return {
    endpoint: w,
    onDeath(cb) {
      // Not preventDefault(): the browser still logs the worker's error with its stack.
      w.addEventListener('error', (ev) => cb(ev.message ? `it threw ${ev.message}` : 'its script failed to load or threw'));
      w.addEventListener('messageerror', () => cb('a message from it could not be read'));
    },
    terminate: () => w.terminate(),
  };
}

/** The page's worker for one agent (Vite bundles agent.worker.ts as its own chunk). */
export function makeAgentWorker(): Worker {
  return new Worker(new URL('./agent.worker.ts', import.meta.url), { type: 'module', name: 'sat-agent' });
}

/** One worker's link: its comlink proxy, and a promise that rejects when it dies or is terminated. */
class Link {
  readonly api: Remote<AgentApi>;
  private failure: AgentWorkerError | null = null;
  private readonly dead: Promise<never>;
  private fail!: (e: AgentWorkerError) => void;

  constructor(
    private readonly worker: AgentWorker,
    private readonly index: number,
  ) {
    this.api = wrap<AgentApi>(worker.endpoint);
    this.dead = new Promise<never>((_, reject) => {
      this.fail = reject;
    });
    this.dead.catch(() => {}); // observed by calls; no unhandled rejection when none is pending
    worker.onDeath((why) => this.die(`Agent ${index}'s worker stopped (${why}); this experiment cannot continue. Start the run again — your settings are kept.`));
  }

  private die(message: string): void {
    if (this.failure) return;
    this.failure = new AgentWorkerError(message);
    this.fail(this.failure);
  }

  /** f() against the worker, rejected with AgentWorkerError as soon as the worker is gone. */
  call<T>(f: (api: Remote<AgentApi>) => Promise<T>): Promise<T> {
    if (this.failure) return Promise.reject(this.failure);
    return Promise.race([f(this.api), this.dead]);
  }

  terminate(): void {
    this.die(`Agent ${this.index}'s worker was terminated.`);
    this.worker.terminate();
  }
}

/**
 * A team's worker calls as one gate (the page's Cancel): `close(e)` makes every later call reject
 * with `e` without reaching a worker, while the calls already in flight finish (a worker runs a
 * call to its end; none is cut in half); `idle()` resolves once none is in flight, so the team can
 * then be put back, and `open()` lets calls through again.
 */
export class CallGate {
  private stopWith: Error | null = null;
  private readonly inFlight = new Set<Promise<unknown>>();

  close(e: Error): void {
    this.stopWith = e;
  }

  open(): void {
    this.stopWith = null;
  }

  /** f() unless the gate is closed; counted in flight until it settles. */
  pass<T>(f: () => Promise<T>): Promise<T> {
    if (this.stopWith) return Promise.reject(this.stopWith);
    const p = f();
    this.inFlight.add(p);
    const done = (): void => void this.inFlight.delete(p);
    p.then(done, done);
    return p;
  }

  /** Resolves once no call let through is still running. */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }
}

/**
 * AgentApi's methods by name. The compiler holds this to exactly the class's public methods (a
 * method added there and not here, or the reverse, does not compile), so each is forwarded below
 * without its signature being written twice.
 */
const AGENT_METHODS = {
  init: 0, onnxSeat: 0, loseDevice: 0, info: 0, cpuThreads: 0, memoryBytes: 0, distributions: 0, logProbs: 0,
  setReference: 0, klToReference: 0, trainStep: 0, surrogateGradient: 0, fisherVectorProduct: 0, update: 0,
  inspect: 0, keep: 0, swapIn: 0, warmUp: 0, kappa: 0, snapshot: 0, restore: 0, interpolate: 0, generate: 0, speak: 0, getLogits: 0, setLogits: 0,
  speed: 0, watchSpeed: 0,
} as const satisfies Record<keyof AgentApi, 0>;

/**
 * An agent's calls as this thread makes them: AgentApi's own signatures. Every AgentApi method is
 * async, so these are what comlink's Remote<AgentApi> calls take and answer (Remote would add its
 * proxy handles and split a union result into a union of promises).
 */
type AgentCalls = Omit<AgentApi, 'init'>;

// Declaration merging: every RemoteAgent has AgentApi's methods, typed from the class.
export interface RemoteAgent extends AgentCalls {}

/**
 * An agent in a worker: the AgentPolicy (and generate) the stage loop and LmEnv call, and every
 * other AgentApi method (the inspector, swaps, the device and thread probes), each one counted
 * call to the worker.
 */
export class RemoteAgent implements LmAgentPolicy, TextSpeaker {
  readonly index: number;
  /** Calls made to the worker so far, per AgentApi method (what one agent step costs). */
  readonly calls = new Map<string, number>();
  private readonly link: Link;

  constructor(
    index: number,
    worker: AgentWorker,
    /** The team's gate (Cancel), shared by its agents; absent, every call goes through. */
    private readonly gate: CallGate = new CallGate(),
  ) {
    installErrorTransfer();
    this.index = index;
    this.link = new Link(worker, index);
  }

  /** One counted call of AgentApi method `name`, through the team's gate. */
  protected call<T>(name: keyof AgentApi, f: (api: Remote<AgentApi>) => Promise<T>): Promise<T> {
    this.calls.set(name, (this.calls.get(name) ?? 0) + 1);
    return this.gate.pass(() => this.link.call(f));
  }

  /** Total calls made to the worker so far. */
  get callCount(): number {
    let n = 0;
    for (const c of this.calls.values()) n += c;
    return n;
  }

  /** Builds the agent in its worker (an LmSpec's model bytes should be transferred: see createRemoteExperiment). */
  init(spec: AgentSpec, transferList: Transferable[] = [], onProgress?: (p: HfProgress) => void): Promise<void> {
    return this.call('init', (api) => api.init(transfer(spec, transferList), onProgress ? proxy(onProgress) : undefined));
  }

  /** Ends the worker; pending and later calls reject with AgentWorkerError. */
  terminate(): void {
    this.link.terminate();
  }
}

for (const name of Object.keys(AGENT_METHODS) as (keyof AgentApi)[]) {
  if (name === 'init') continue; // above: its spec's buffers are transferred and its progress callback proxied
  Object.defineProperty(RemoteAgent.prototype, name, {
    value(this: RemoteAgent, ...args: unknown[]): Promise<unknown> {
      return this['call'](name, (api) => (api[name] as (...a: unknown[]) => Promise<unknown>)(...args));
    },
    writable: true,
    configurable: true,
  });
}

/** A table in a worker: also what the tabular swap (experiment.ts `swapAgent`) needs. */
export class RemoteTableAgent extends RemoteAgent implements TableAgent {
  readonly nObs: number;
  readonly nActions: number;

  constructor(index: number, worker: AgentWorker, nObs: number, nActions: number) {
    super(index, worker);
    this.nObs = nObs;
    this.nActions = nActions;
  }
}

/** A Hugging Face checkpoint folder seated as one agent (src/app/hfFiles.ts reads it). */
export interface SeatCheckpoint {
  /** Folder name and short hash, as the page shows it. */
  readonly name: string;
  /** hfFolderHash of the files. */
  readonly hash: string;
  readonly files: HfFiles;
  /** How its weights are stored on load (the card's choice). */
  readonly quant: QuantKind;
  /** An ONNX model folder: which .onnx file, and whether the seat trains (mapped into our model) or is frozen (run by onnxruntime-web). */
  readonly onnx?: { readonly file: string; readonly mode: 'trainable' | 'frozen' };
}

export interface RemoteExperimentOptions {
  /** Starts one agent's worker: `makeAgentWorker` in the page, a worker_threads adapter in Node. */
  readonly makeWorker: () => Worker | AgentWorker;
  /** Reads a shipped model's bytes (language tasks only). */
  readonly load?: ModelLoader;
  /**
   * Seats (agent index → folder) that hold a checkpoint instead of the shipped model (language
   * tasks): the files go to that agent's worker, which loads and quantizes them (agentApi.ts
   * `HfAgentSpec`). Its tokenizer is built only off this thread: the seat's context is measured by
   * a budgeted input check (`checkpointHead` / `onnxHead`), and the environment hands every agent
   * in a worker its prompts as text (`speak`), which the worker encodes, answers and decodes.
   */
  readonly seats?: ReadonlyMap<number, SeatCheckpoint>;
  /** The memory a seated checkpoint may take, and what that limit is, in words. */
  readonly seatLimit?: { readonly bytes: number; readonly where: string };
  /** A seat's load progress (reading, converting, quantizing). */
  readonly onSeatProgress?: (agent: number, p: HfProgress) => void;
  /** Language teams: each agent's sampling so far, told by its worker after every sampling call (agentApi.ts `watchSpeed`). */
  readonly onSpeed?: (agent: number, s: SeatSpeed) => void;
  /** Aborting ends every worker started and rejects with a SatError ("cancelled"). */
  readonly signal?: AbortSignal;
  /**
   * Where a seat's tokenizer is built to measure its context: the page passes its budgeted input
   * worker (src/app/inputCheck.ts `checkInput`); absent, this thread (budget.ts `inProcess`).
   */
  readonly check?: Check;
}

interface RemoteParts {
  /** Per agent: name, kind, parameters and the backend it runs on. */
  readonly infos: readonly AgentInfo[];
  /** Ends every worker (idempotent); later calls reject with AgentWorkerError. */
  terminate(): void;
}

export interface RemoteTabularExperiment extends TableExperiment, RemoteParts {
  readonly kind: 'tabular';
  readonly env: TabularEnv;
  readonly team: RemoteTableAgent[];
}

export interface RemoteLlmExperiment extends Experiment, RemoteParts {
  readonly kind: 'lm';
  /** Every agent's calls pass it: closed, the stage loop's next call fails (the page's Cancel). */
  readonly gate: CallGate;
  readonly env: LmEnv;
  readonly team: RemoteAgent[];
  readonly modelName: string;
}

export type RemoteExperiment = RemoteTabularExperiment | RemoteLlmExperiment;

function asAgentWorker(w: Worker | AgentWorker): AgentWorker {
  return 'endpoint' in w && 'onDeath' in w ? w : browserWorker(w);
}

/**
 * The experiment createTabularExperiment / createLlmExperiment would build, with every agent in its own
 * worker. Workers start in parallel; if any fails to start, all are ended and the error is thrown.
 */
export async function createRemoteExperiment(cfg: Config, opts: RemoteExperimentOptions): Promise<RemoteExperiment> {
  const started: RemoteAgent[] = [];
  const terminate = (): void => started.forEach((a) => a.terminate());
  try {
    if (!isLlmTask(cfg.task)) {
      const { game, env, aMax, agents } = planTabular(cfg);
      const team = agents.map((init) => new RemoteTableAgent(init.index, asAgentWorker(opts.makeWorker()), init.nObs, init.nActions));
      started.push(...team);
      await Promise.all(team.map((a, i) => a.init({ kind: 'tabular', ...agents[i]! })));
      const infos = await Promise.all(team.map((a) => a.info()));
      const j0 = (await env.evaluate(team)).J;
      return { kind: 'tabular', cfg, game, env, team, rng: new Rng(cfg.seed), betas: team.map(() => cfg.beta), aMax, j0, stagesDone: 0, infos, terminate };
    }
    if (!opts.load) throw new ConfigError('task', cfg.task, `Task "${cfg.task}" trains language models: createRemoteExperiment needs a model loader (opts.load).`);
    const { modelName, env, aMax, agents } = planLlm(cfg);
    const seats = opts.seats ?? new Map<number, SeatCheckpoint>();
    const files = new Map<string, Uint8Array>();
    for (const f of new Set(agents.filter((a) => !seats.has(a.index)).map((a) => a.modelFile))) files.set(f, await opts.load(f));
    const gate = new CallGate();
    const team = agents.map((init) => new RemoteAgent(init.index, asAgentWorker(opts.makeWorker()), gate));
    started.push(...team);
    const cancelled = new Promise<never>((_, reject) => {
      const stop = (): void => reject(new SatError('cancelled', 'Building the team was cancelled.'));
      if (opts.signal?.aborted) stop();
      opts.signal?.addEventListener('abort', stop, { once: true });
    });
    cancelled.catch(() => {});
    // The context each trainable seat needs, measured with its tokenizer off this thread (a frozen
    // ONNX seat measures its own in its worker).
    const check = opts.check ?? inProcess;
    const measured = new Map<SeatCheckpoint, Promise<number>>(); // a folder seated twice is measured once
    const measure = async (seat: SeatCheckpoint): Promise<number> => {
      const head = [...seat.files].filter(([n]) => n.endsWith('.json'));
      const what = `The checkpoint “${seat.name}”`;
      const settings = cfg; // the check reads the prompt settings (HfContextSettings) of it
      return (seat.onnx ? await check('onnxHead', { files: head, settings, mode: seat.onnx.mode }, what) : await check('checkpointHead', { files: head, settings }, what)).context;
    };
    const contexts = new Map<number, number>();
    await Promise.race([cancelled, Promise.all([...seats].map(async ([j, seat]) => {
      if (seat.onnx?.mode === 'frozen') return;
      if (!measured.has(seat)) measured.set(seat, measure(seat));
      contexts.set(j, await measured.get(seat)!);
    }))]);
    await Promise.race([cancelled, Promise.all(
      team.map((a, i) => {
        const init = agents[i]!;
        const seat = seats.get(init.index);
        const limit = opts.seatLimit ?? { bytes: Number.MAX_SAFE_INTEGER, where: 'no limit' };
        const progress = opts.onSeatProgress ? (p: HfProgress) => opts.onSeatProgress!(init.index, p) : undefined;
        if (seat) {
          const context = contexts.get(init.index); // the worker's model gets this maxSeq
          const copies = new Map([...seat.files].map(([k, v]) => [k, v.slice()] as const));
          const common = {
            index: init.index, name: seat.name, files: copies, quant: seat.quant, maxSeq: context, backend: agentBackend(cfg),
            memory: { ...hfSeatBudget(cfg, context), limitBytes: limit.bytes, where: limit.where },
            agent: { loraRank: hfSeatBudget(cfg).loraRank, loraAlpha: cfg.loraAlpha, seed: hfSeatSeed(cfg.seed, init.index), temperature: cfg.temperature, topK: cfg.topK, activations: cfg.activations },
          };
          const spec: AgentSpec = seat.onnx ? { kind: 'onnx', mode: seat.onnx.mode, file: seat.onnx.file, settings: cfg, ...common } : { kind: 'hf', ...common };
          return a.init(spec, [...copies.values()].map((v) => v.buffer), progress);
        }
        // Each worker gets its own copy, transferred: the loader may cache the bytes, and a Node
        // Buffer can be a view into a shared pool.
        const model = files.get(init.modelFile)!.slice();
        return a.init({ kind: 'lm', modelName: init.modelFile, model, backend: agentBackend(cfg), ...init }, [model.buffer]);
      }),
    )]);
    const infos = await Promise.all(team.map((a) => a.info()));
    if (opts.onSpeed) await Promise.all(team.map((a) => a.watchSpeed(proxy((s: SeatSpeed) => opts.onSpeed!(a.index, s)))));
    const j0 = (await env.evaluate(team)).J;
    return { kind: 'lm', cfg, env, team, rng: new Rng(cfg.seed), betas: team.map(() => cfg.beta), aMax, j0, stagesDone: 0, modelName, infos, terminate, gate, swapModel: lazyLmSwap(opts.load) };
  } catch (e) {
    terminate();
    throw e;
  }
}

/** The configured swap, its code (models, projection) fetched on the first swap rather than with the page. */
function lazyLmSwap(load: ModelLoader): NonNullable<Experiment['swapModel']> {
  return async (exp, j, name) => (await import('../sat/lmSwap')).configuredLmSwap(load)(exp, j, name);
}

/**
 * Where a language agent's worker computes: the backend setting, except that int8 activations
 * (CPU kernels only) keep `auto` on the CPU — config refuses them with backend = webgpu, and a
 * hardware adapter chosen by `auto` would refuse them at seating.
 */
export function agentBackend(cfg: Pick<Config, 'backend' | 'activations'>): Config['backend'] {
  return cfg.activations === 'int8' ? 'cpu' : cfg.backend;
}
