/**
 * Builds the session's team in the browser: the experiment for a config. A table game's agents
 * run in this tab (a step takes microseconds: no worker to wait for); a language team's each in its
 * own Web Worker when the browser has workers (one per agent, comlink; ../workers), in this tab
 * otherwise. Language presets fetch their shipped model files from `models/` next to the page;
 * a seat may instead hold a Hugging Face checkpoint folder the person picked (`OpenExtras.seats`,
 * loaded in that seat's worker: src/workers/remoteTeam.ts).
 *
 * Not here: stepping (session.ts) or the agents' maths (src/sat).
 */
import { FormatError, SatError } from '../core/errors';
import { isLlmTask, type Config } from '../sat/config';
import { agentInfos, createTabularExperiment, teamAgents, type Experiment, type ModelLoader } from '../sat/experiment';
import { createRemoteExperiment, makeAgentWorker, type CallGate, type RemoteAgent, type RemoteExperimentOptions } from '../workers/remoteTeam';
import type { AgentView } from './store';
import { backendLine, wasmSimd, type BackendLine } from './backendLine';
import { checkInput } from './inputCheck';
import { warmUpShape } from '../sat/warmUp';

export interface TeamHandle {
  readonly exp: Experiment;
  readonly agents: readonly AgentView[];
  /** Where the agents run, in words. */
  readonly backend: string;
  /** The header's line (backendLine.ts). */
  readonly line?: BackendLine;
  /** The agents in their workers, by index (their inspector, device and thread probes); null when they run in this tab. */
  readonly workers: readonly RemoteAgent[] | null;
  /** A language team in workers: the gate every agent call passes (Cancel closes it between calls). */
  readonly gate?: CallGate;
  /**
   * Starts warming a language team's workers in the background (agentApi.ts `warmUp`), one agent
   * at a time after a short pause, until `stopWarmUp` — which every step calls first, so a warm-up
   * delays a click by at most the one agent's warm-up in flight. Absent: nothing to warm.
   */
  warmUp?(): void;
  stopWarmUp?(): void;
  /** How many agents' workers have finished their warm-up. */
  warmed?(): number;
  /** Ends the workers (if any). */
  terminate(): void;
}

/** How long a built team stays idle before its warm-up starts: a step or replay right away skips it. */
const WARM_UP_DELAY_MS = 400;

/**
 * After the warm-up proper, passes of the same calls on a batch a sixteenth the size: V8 tiers a
 * function up by how often it runs, and each agent's worker runs the agent code on its own, so
 * these few cheap calls let it reach its optimised code before the stages instead of during them.
 */
const LIGHT_PASSES = 3;

/** `TeamHandle.warmUp` / `stopWarmUp` over the agents' workers. */
function warmer(cfg: Config, workers: readonly RemoteAgent[]): Pick<TeamHandle, 'warmUp' | 'stopWarmUp' | 'warmed'> {
  const shape = warmUpShape(cfg);
  const light = { ...shape, episodes: Math.max(2, Math.ceil(shape.episodes / 16)), certEpisodes: Math.max(2, Math.ceil(shape.certEpisodes / 16)) };
  let stopped = false;
  let done = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  return {
    warmUp() {
      timer = setTimeout(async () => {
        for (const a of workers) {
          if (stopped) return;
          // A worker that fails here fails its next real call too, which says so: nothing to report twice.
          if (!(await a.warmUp(shape).catch(() => false))) return;
          done++;
        }
        for (let pass = 0; pass < LIGHT_PASSES; pass++) {
          for (const a of workers) {
            if (stopped || !(await a.warmUp(light).catch(() => false))) return;
          }
        }
      }, WARM_UP_DELAY_MS);
    },
    stopWarmUp() {
      stopped = true;
      clearTimeout(timer);
    },
    warmed: () => done,
  };
}

/** Fetches `models/<name>.safetensors` relative to the page (works from any static host). */
const fetchModel: ModelLoader = async (name) => {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) throw new FormatError(`"${name}" is not a model name.`);
  const url = new URL(`models/${name}.safetensors`, document.baseURI);
  let res: Response;
  try {
    res = await fetch(url);
  } catch (e) {
    throw new SatError('io', `Could not fetch the model file ${url.pathname}: ${e instanceof Error ? e.message : String(e)}. Is the page served over http(s)?`);
  }
  if (!res.ok) throw new SatError('io', `The model file ${url.pathname} could not be loaded (HTTP ${res.status}). The shipped models live in public/models/.`);
  return new Uint8Array(await res.arrayBuffer());
};

/** Checkpoint seats, their load's progress and limit, and a signal that cancels the build. */
export type OpenExtras = Pick<RemoteExperimentOptions, 'seats' | 'seatLimit' | 'onSeatProgress' | 'signal' | 'onSpeed'>;

/** Builds the team for a config: `openTeam` in the page; tests may pass their own. */
export type TeamOpener = (cfg: Config, onProgress: (msg: string) => void, extras?: OpenExtras) => Promise<TeamHandle>;

/**
 * The team for `cfg`: in Web Workers (one per agent) when the browser has them — always, in any
 * browser this page supports — else in this tab, said plainly.
 */
export async function openTeam(cfg: Config, onProgress: (msg: string) => void, extras: OpenExtras = {}): Promise<TeamHandle> {
  onProgress(isLlmTask(cfg.task) ? `Loading ${cfg.task}-${cfg.model} into ${cfg.agents} workers and measuring the team’s held-out J…` : 'Building the tables…');
  if (!isLlmTask(cfg.task)) {
    // A table agent's step takes well under a millisecond: it runs in this tab, usable at once,
    // with no worker to start and no message to pass per call.
    const exp = createTabularExperiment(cfg);
    const infos = await agentInfos(exp);
    const agents = infos.map((info, index) => ({ ...info, index, memoryBytes: 8 * 5 * info.parameters } /* logits, reference logits and log-probs, Adam's two moments */));
    const line = backendLine({ workers: false, agents, simd: false, threads: null, isolated: globalThis.crossOriginIsolated === true });
    return { exp, agents, backend: line.detail, line, workers: null, terminate() {} };
  }
  if (typeof Worker === 'undefined') {
    if ((extras.seats?.size ?? 0) > 0) throw new SatError('worker', 'A seat with its own checkpoint loads it in a Web Worker, and this browser has none; the team was not changed.');
    const exp = isLlmTask(cfg.task) ? await (await import('../sat/llmExperiment')).createLlmExperiment(cfg, fetchModel) : createTabularExperiment(cfg);
    const infos = await agentInfos(exp);
    const agents = infos.map((info, index) => ({ ...info, index }));
    const line = backendLine({ workers: false, agents, simd: wasmSimd(), threads: null, isolated: globalThis.crossOriginIsolated === true });
    return { exp, agents, backend: `No Web Workers here. ${line.detail}`, line, workers: null, terminate() {} };
  }
  const exp = await createRemoteExperiment(cfg, { makeWorker: makeAgentWorker, load: fetchModel, check: checkInput, ...extras });
  const workers: readonly RemoteAgent[] = teamAgents(exp);
  const memory = await Promise.all(workers.map((a) => a.memoryBytes().catch(() => undefined)));
  const agents = exp.infos.map((info, index) => ({ ...info, index, memoryBytes: memory[index] }));
  const threads = isLlmTask(cfg.task)
    ? await workers[0]!.cpuThreads().then((t) => ({ n: t.threads, why: t.why }), () => null)
    : null;
  const line = backendLine({ workers: true, agents, simd: wasmSimd(), threads, isolated: globalThis.crossOriginIsolated === true });
  const warm = isLlmTask(cfg.task) ? warmer(cfg, workers) : {};
  return {
    exp, agents, backend: line.detail, line, workers, ...warm, ...(exp.kind === 'lm' ? { gate: exp.gate } : {}),
    terminate() {
      warm.stopWarmUp?.();
      exp.terminate();
    },
  };
}
