/**
 * An imported run's state and its place on the page: the open log and the open generation dump
 * (small stores of their own), how Import and a `?run=` link open them, and the slot that mounts
 * their views. The view and its
 * charts (./RunLogView.tsx, recharts) load only once a run is open, so the page's main chunk
 * carries none of the plotting code.
 *
 * Not here: the view itself (./RunLogView.tsx) or parsing (src/bridge).
 */
import { lazy, Suspense, useEffect } from 'react';
import { create } from 'zustand';
import type { OpenedRun } from '../../bridge/runLogCharts';
import type { GenerationDump } from '../../bridge/generations';
import { checkFileBytes, LOG_LIMITS } from '../../bridge/limits';
import { RUN_FILE_EXTENSION } from '../../bridge/runLogFile';
import { checkInput } from '../inputCheck';
import { usePlayground } from '../store';

/** The file types Import hands to this view. */
export const RUN_LOG_ACCEPT = `.jsonl,.json,.csv,.log,.txt,${RUN_FILE_EXTENSION}`;

/** The imported run on the page, if any: the run and what its charts draw, both worked out in the check's worker (bridge/runLogCharts.ts). */
export const useRunLog = create<{ run: OpenedRun | null }>(() => ({ run: null }));

/** The imported generation dump (a real run's episodes, shown in the transcripts view: charts/TranscriptTable.tsx), if any; `opened` counts imports (a new one starts unfiltered). */
export const useGenerations = create<{ dump: GenerationDump | null; opened: number }>(() => ({ dump: null, opened: 0 }));

const errorOf = (e: unknown) => (e instanceof Error ? e.message : String(e));

/**
 * Opens a picked log: the File goes to the budgeted worker, which tells a generation dump from a
 * run log and reads it there (this thread never holds its bytes); one over the size cap is refused
 * before that.
 */
export async function openRunLogFile(file: Blob, name: string): Promise<void> {
  try {
    checkFileBytes(file.size, LOG_LIMITS, 'run log');
    // The view's code (recharts) loads and compiles while the worker reads, not in the task that draws.
    void loadRunLogView();
    const opened = await checkInput('importLog', { source: file, name, charts: true }, `log "${name}"`);
    if (opened.kind === 'generations') {
      const { dump } = opened;
      useGenerations.setState((s) => ({ dump, opened: s.opened + 1 }));
      usePlayground.setState({ notice: `Opened the generation dump “${name}”: ${dump.rows.length} replies of ${dump.steps.length} step${dump.steps.length > 1 ? 's' : ''}, in the transcripts view (“What did the agents say?”).` });
      return;
    }
    const { log, charts } = opened;
    useRunLog.setState({ run: { log, charts: charts! } });
    usePlayground.setState({ notice: `Opened the run log “${name}”: ${log.steps.length} steps${log.warnings.length > 0 ? `, ${log.warnings.length} problem${log.warnings.length > 1 ? 's' : ''} skipped (listed under its charts)` : ''}.` });
  } catch (e) {
    usePlayground.setState({ error: `“${name}”: ${errorOf(e)} Your current experiment was not changed.` });
  }
}

const loadRunLogView = () => import('./RunLogView');
const RunLogView = lazy(async () => ({ default: (await loadRunLogView()).RunLogView }));

/** Where an imported run shows: opens a `?run=` link's run once, then the view while a run is open. */
export function RunLogSlot() {
  const open = useRunLog((s) => s.run !== null);
  useEffect(() => {
    const p = new URLSearchParams(location.search).get('run');
    if (!p || useRunLog.getState().run) return;
    // inflated and read in the budgeted worker, as a file is
    checkInput('runLink', p, 'This run link').then(
      (run) => useRunLog.setState({ run }),
      (e: unknown) => usePlayground.setState({ error: `${errorOf(e)} Your current experiment was not changed.` }),
    );
  }, []);
  if (!open) return null;
  return (
    <Suspense fallback={<p className="muted">Loading the run's charts…</p>}>
      <RunLogView />
    </Suspense>
  );
}
