/**
 * Actions that run an experiment from the page (module functions, not hooks — ARCHITECTURE.md
 * convention 7). For now the tabular presets run in the main thread: one whole stage at a time,
 * then the thread is handed back to the browser so clicks (Cancel) and repaints get through and
 * the page never freezes. Cancel takes effect between stages, so every row shown is a complete
 * stage. Each "Run stages" starts a fresh experiment from the chosen preset and seed.
 *
 * Not here: workers and the WebGPU backend (a later issue moves this loop behind AgentApi), and
 * formatting (components).
 */
import { SatError } from '../core/errors';
import { createExperiment, runStages } from '../sat/experiment';
import { presetConfig } from '../sat/presets';
import { type StageRow, stageRow } from './stageRow';
import { usePlayground } from './store';

/** The run in progress, if any; `cancelled` is checked between stages. */
let current: { cancelled: boolean } | null = null;

/** Publish rows to React at most this often (ms), and always after the last stage. */
const PUBLISH_MS = 50;

/**
 * Yields to the event loop. A MessageChannel task, unlike setTimeout(0), is not clamped to 4 ms
 * when nested, nor throttled to 1 s in a background tab.
 */
function yieldToBrowser(): Promise<void> {
  return new Promise((resolve) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => {
      ch.port1.close();
      resolve();
    };
    ch.port2.postMessage(null);
  });
}

function message(e: unknown): string {
  if (e instanceof SatError) return e.message;
  if (e instanceof Error) return `The run stopped with an unexpected error: ${e.message}. The rows above are complete stages; please report this with the preset and seed.`;
  return `The run stopped with an unexpected error: ${String(e)}.`;
}

export async function startRun(): Promise<void> {
  const s = usePlayground.getState();
  if (s.status === 'running') return;
  let exp;
  try {
    exp = createExperiment(presetConfig(s.preset, { seed: s.seed.trim(), stages: s.stages.trim() }));
  } catch (e) {
    usePlayground.setState({ error: message(e) });
    return;
  }
  const { cfg } = exp;
  const token = { cancelled: false };
  current = token;
  const nAgents = exp.team.length;
  usePlayground.setState({
    status: 'running',
    total: cfg.stages,
    rows: [],
    error: null,
    info: { preset: s.preset, seed: cfg.seed, nAgents, j0: exp.j0, delta: cfg.delta, alpha: cfg.alpha },
  });
  const rows: StageRow[] = [];
  let published = performance.now();
  const publish = () => {
    usePlayground.setState({ rows: rows.slice() });
    published = performance.now();
  };
  try {
    // Let the "stage 0 / N" state paint before the first stage starts.
    await yieldToBrowser();
    while (rows.length < cfg.stages && !token.cancelled) {
      const [rec] = await runStages(exp, 1);
      rows.push(stageRow(rec!, nAgents));
      if (performance.now() - published >= PUBLISH_MS) publish();
      await yieldToBrowser();
    }
    publish();
    usePlayground.setState({ status: rows.length < cfg.stages ? 'cancelled' : 'done' });
  } catch (e) {
    publish();
    usePlayground.setState({ status: 'error', error: message(e) });
  } finally {
    if (current === token) current = null;
  }
}

/** Stops the current run after the stage in progress; the rows so far are kept. */
export function cancelRun(): void {
  if (current) current.cancelled = true;
}
