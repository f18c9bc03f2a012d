/**
 * The step-through bar, the first thing a newcomer presses: Step agent ▸, Step stage ▸▸,
 * Run ▶ / Pause ❚❚, Reset, Check bound (language teams), the speed, and — while long work runs — its progress with a Cancel
 * button. Keyboard: → or A steps an agent, S a stage, Space runs/pauses, R resets (not while typing
 * in a field).
 *
 * Not here: what the actions do (session.ts), or sharing and files (ShareBar.tsx).
 */
import { useEffect, useRef } from 'react';
import { useSession } from '../sessionContext';
import { isLlmTask } from '../../sat/config';
import { CHECK_PAIRS } from '../session';
import { setSpeed, usePlayground, type Speed } from '../store';

function typingIn(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  if (!el || !el.tagName) return false;
  return el.tagName === 'INPUT' || el.tagName === 'SELECT' || el.tagName === 'TEXTAREA' || el.isContentEditable;
}

/** Global shortcuts; mounted once by the bar. */
function useShortcuts(): void {
  const session = useSession();
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey || typingIn(e.target)) return;
      // Arrow keys inside the timeline move its selection instead.
      if ((e.target as HTMLElement | null)?.closest?.('[data-testid="timeline"]') && e.key.startsWith('Arrow')) return;
      const status = usePlayground.getState().status;
      switch (e.key) {
        case 'ArrowRight':
        case 'a':
        case 'A':
          e.preventDefault();
          void session.stepAgent();
          break;
        case 's':
        case 'S':
          e.preventDefault();
          void session.stepStage();
          break;
        case ' ':
          e.preventDefault();
          if (status === 'running') session.pause();
          else void session.play();
          break;
        case 'r':
        case 'R':
          e.preventDefault();
          void session.reset();
          break;
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [session]);
}

/**
 * Long work's time left, from its pace so far: (elapsed / done) × what remains, once a first part
 * is done (a guess before it would be noise). The clock starts when the work appears, or where
 * the work says its pace is measured from (`pace`: a language stage continued by a later click).
 */
function TimeLeft({ done, total, pace, units }: { done: number; total: number; pace?: { since: number; done: number }; units?: boolean }) {
  const start = useRef(performance.now());
  const since = pace?.since ?? start.current;
  const from = pace?.done ?? 0;
  if (total <= 1 || done <= from || done >= total) return null;
  const left = ((performance.now() - since) / (done - from)) * (total - done) / 1000;
  return (
    <span className="work-left muted" data-testid="progress-left">
      {units ? `${Math.round((100 * done) / total)} %` : `${done} of ${total}`} · about {left < 60 ? `${Math.max(1, Math.round(left))} s` : `${Math.round(left / 60)} min`} left
    </span>
  );
}

/**
 * Where the run stands, in words: "Building the team…", "Stage 5 of 30: 2 of 3 agents updated",
 * "Stage 5 of 30 done", "All 30 stages done"; a step in flight says so.
 */
export function whereWords(w: { status: string; stagesDone: number; stepsDone: number; total: number; nAgents: number; joint: boolean }): string {
  if (w.status === 'idle' || (w.status === 'loading' && w.total > 0 && w.nAgents === 0)) return 'Building the team…';
  if (w.status === 'done' || (w.total > 0 && w.stagesDone >= w.total && w.stepsDone === 0)) return `All ${w.total} stages done`;
  const stepping = w.status === 'busy' || w.status === 'running';
  if (w.stepsDone > 0) {
    return `Stage ${w.stagesDone + 1} of ${w.total}: ${w.stepsDone} of ${w.nAgents} agents updated${stepping ? ', stepping…' : ''}`;
  }
  if (w.stagesDone === 0) return stepping ? `Stage 1 of ${w.total}: stepping…` : `Ready: stage 1 of ${w.total} next`;
  return `Stage ${w.stagesDone} of ${w.total} done${stepping ? `; stage ${w.stagesDone + 1} stepping…` : ''}${w.joint ? ' (joint steps)' : ''}`;
}

export function StepControls() {
  useShortcuts();
  const session = useSession();
  const status = usePlayground((s) => s.status);
  const progress = usePlayground((s) => s.progress);
  const speed = usePlayground((s) => s.speed);
  const stagesDone = usePlayground((s) => s.stages.length);
  const stepsDone = usePlayground((s) => s.partial.length);
  const total = usePlayground((s) => s.config?.stages ?? 0);
  const nAgents = usePlayground((s) => s.agents.length);
  const joint = usePlayground((s) => s.config?.scheme === 'simultaneous');
  const language = usePlayground((s) => !!s.config && isLlmTask(s.config.task));
  const lastHeld = usePlayground((s) => s.stages[s.stages.length - 1]?.held?.state);
  const running = status === 'running';
  const working = status === 'busy' || status === 'loading';
  const noTeam = status === 'idle' || (status === 'loading' && stagesDone === 0 && !progress?.cancellable);
  const done = status === 'done';
  return (
    <div className="stepbar" id="step-controls" tabIndex={-1} role="toolbar" aria-label="Step through SAT">
      <button
        type="button"
        data-testid="step-agent"
        disabled={noTeam || working || running || done}
        onClick={() => void session.stepAgent()}
        title={joint ? 'scheme = simultaneous: every agent moves at once, so one step is the whole stage (→ or A)' : 'One agent update of the current stage (→ or A)'}
      >
        {joint ? 'Step (joint) ▸' : 'Step agent ▸'}
      </button>
      <button type="button" data-testid="step-stage" disabled={noTeam || working || running || done} onClick={() => void session.stepStage()} title="Finish the current stage (S)">
        Step stage ▸▸
      </button>
      <button
        type="button"
        className="primary"
        data-testid="run"
        disabled={noTeam || working || (done && !running)}
        onClick={() => (running ? session.pause() : void session.play())}
        title="Keep stepping at the chosen speed; press again to pause (Space)"
      >
        {running ? 'Pause ❚❚' : 'Run ▶'}
      </button>
      <button type="button" data-testid="reset" disabled={working || running} onClick={() => void session.reset()} title="A fresh team with the same settings and seed (R)">
        Reset
      </button>
      {language && (
        <button
          type="button"
          data-testid="check-bound"
          disabled={working || running || stagesDone === 0 || stepsDone > 0 || (lastHeld !== undefined && lastHeld !== 'unchecked')}
          onClick={() => void session.checkLastStage()}
          title={`Test the last stage's lower bound against an estimate of its true ΔJ: the starting and the final team answer the same ${CHECK_PAIRS.toLocaleString('en')} prompts with the same sampler draws (docs/certificate.md §12). Thousands of rollouts: seconds to minutes.`}
        >
          Check bound
        </button>
      )}
      <label className="speed" title="Pause between agent steps while running">
        <span className="field-label">Speed</span>
        <select data-testid="speed" value={speed} onChange={(e) => setSpeed(e.target.value as Speed)}>
          <option value="slow">slow</option>
          <option value="normal">normal</option>
          <option value="fast">fast</option>
        </select>
      </label>
      <div className="where" data-testid="where" aria-live="polite">
        {whereWords({ status, stagesDone, stepsDone, total, nAgents, joint })}
      </div>
      {progress && (
        <div className="work" data-testid="progress" role="status">
          <span className="work-label">{progress.label}</span>
          {progress.total > 1 && (
            <span className="progress-bar" role="progressbar" aria-valuemin={0} aria-valuemax={progress.total} aria-valuenow={progress.done}>
              <span className="progress-fill" style={{ width: `${(100 * progress.done) / progress.total}%` }} />
            </span>
          )}
          <TimeLeft done={progress.done} total={progress.total} pace={progress.pace} units={progress.units} />
          {progress.cancellable && (
            <button type="button" className="small" data-testid="cancel" onClick={() => session.cancelWork()}>
              Cancel
            </button>
          )}
        </div>
      )}
    </div>
  );
}
