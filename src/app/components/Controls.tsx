/**
 * The left column: preset picker with its "what to look for", seed and stage count (tooltips
 * from the config table's doc strings), Run / Cancel, and the progress line "stage k / N".
 *
 * Not here: running anything (run.ts) or the full settings form (a later issue builds it from
 * CONFIG; this form only has the three knobs this page needs).
 */
import { CONFIG, describeAllowed } from '../../sat/config';
import { PRESETS, findPreset } from '../../sat/presets';
import { cancelRun, startRun } from '../run';
import { setPreset, setSeed, setStages, usePlayground } from '../store';

const tip = (key: 'seed' | 'stages') => `${CONFIG[key].doc} Allowed: ${describeAllowed(CONFIG[key])}.`;

export function Controls() {
  const preset = usePlayground((s) => s.preset);
  const seed = usePlayground((s) => s.seed);
  const stages = usePlayground((s) => s.stages);
  const status = usePlayground((s) => s.status);
  const done = usePlayground((s) => s.rows.length);
  const total = usePlayground((s) => s.total);
  const running = status === 'running';
  const p = findPreset(preset);

  return (
    <aside className="controls" aria-label="Experiment controls">
      <form
        noValidate // parseConfig's message names the setting and its range; the browser's bubble would not
        onSubmit={(e) => {
          e.preventDefault();
          void startRun();
        }}
      >
        <label className="field">
          <span className="field-label">Preset</span>
          <select data-testid="preset" value={preset} disabled={running} onChange={(e) => setPreset(e.target.value)}>
            {PRESETS.filter((x) => x.kind === 'tabular').map((x) => (
              <option key={x.name} value={x.name}>
                {x.name}
              </option>
            ))}
          </select>
        </label>
        <div className="preset-card">
          <div className="preset-title" data-testid="preset-title">
            {p.title}
          </div>
          <div className="preset-look">
            <span className="look-label">What to look for.</span> {p.lookFor}
          </div>
        </div>

        <div className="field-row">
          <label className="field" title={tip('seed')}>
            <span className="field-label">Seed</span>
            <input data-testid="seed" type="number" inputMode="numeric" min={0} step={1} value={seed} disabled={running} onChange={(e) => setSeed(e.target.value)} />
          </label>
          <label className="field" title={tip('stages')}>
            <span className="field-label">Stages</span>
            <input data-testid="stages" type="number" inputMode="numeric" min={1} step={1} value={stages} disabled={running} onChange={(e) => setStages(e.target.value)} />
          </label>
        </div>

        <div className="buttons">
          <button type="submit" className="primary" data-testid="run" disabled={running}>
            Run stages
          </button>
          <button type="button" data-testid="cancel" disabled={!running} onClick={cancelRun}>
            Cancel
          </button>
        </div>
      </form>

      <div className="progress" data-testid="progress" aria-live="polite">
        {status === 'idle' ? (
          <span className="muted">Each run starts a fresh team from the preset and seed.</span>
        ) : (
          <>
            <div className="progress-text">
              {status === 'running' && `Running… stage ${done} / ${total}`}
              {status === 'done' && `Done: stage ${done} / ${total}`}
              {status === 'cancelled' && `Cancelled after stage ${done} / ${total}`}
              {status === 'error' && `Stopped at stage ${done} / ${total}`}
            </div>
            <div className="progress-bar" role="progressbar" aria-valuemin={0} aria-valuemax={total} aria-valuenow={done}>
              <div className="progress-fill" style={{ width: `${total > 0 ? (100 * done) / total : 0}%` }} />
            </div>
          </>
        )}
      </div>
    </aside>
  );
}
