/**
 * The left column: the presets gallery (each with its "what to look for" and its "predict, then
 * run" question, whose Reveal shows the answer this run measured — src/studies/worksheet.ts) and every setting of the
 * one config table, grouped in the order of docs/method.md's sections (task, model, run,
 * advantages, objective, trust region, order, certificate, swap; the list is docs/method.md §11).
 * Each control's tooltip is its doc comment and allowed range; a share link's `<key>_hide=true`
 * hides it (`settings_hide` the whole fold). The settings fold away, closed by default, so the first
 * screen shows the run. Edits are drafts until Apply (Enter) builds a fresh team.
 *
 * Not here: the step controls (StepControls.tsx) or the team builder (TeamBuilder.tsx).
 */
import { memo, useMemo, useState } from 'react';
import { CONFIG, CONFIG_KEYS, describeAllowed, isLlmTask, TABULAR_ONLY_KEYS, type ConfigKey, type Field, type Group } from '../../sat/config';
import { PRESETS, findPreset } from '../../sat/presets';
import { BUDGETS } from '../../sat/hfSeatLimits';
import { answerWorksheet, WORKSHEET } from '../../studies/worksheet';
import { useSession } from '../sessionContext';
import { Fold } from './Fold';
import { isDirty, setField, usePlayground } from '../store';

const GROUPS: readonly { group: Group; title: string; open: boolean }[] = [
  { group: 'task', title: 'Task and team', open: true },
  { group: 'model', title: 'Language models', open: true },
  { group: 'run', title: 'Run', open: true },
  { group: 'advantage', title: 'Advantages (§4)', open: false },
  { group: 'objective', title: 'Objective (§5)', open: false },
  { group: 'trust', title: 'Trust region (§6)', open: true },
  { group: 'order', title: 'Update order (§3)', open: false },
  { group: 'certificate', title: 'Certificate (§7)', open: false },
  { group: 'swap', title: 'Plug-and-play (§8)', open: false },
];


export const tooltip = (key: ConfigKey): string => `${key}: ${CONFIG[key].doc} Allowed: ${describeAllowed(CONFIG[key])}.`;

/** A setting's label in words ("taskSeed" → "task seed", "penaltyK" → "penalty k"); the key itself is in the tooltip and the link. */
export const labelWords = (key: string): string => key.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();

/** One setting; disabled with the fieldset around all of them, so the status flipping redraws none. */
const FieldControl = memo(function FieldControl({ k }: { k: ConfigKey }) {
  const f: Field = CONFIG[k];
  const value = usePlayground((s) => s.form[k]);
  const applied = usePlayground((s) => s.applied[k]);
  const changed = value !== applied;
  const common = { id: `cfg-${k}`, 'data-testid': `cfg-${k}`, 'aria-describedby': `tip-${k}` };
  let input;
  if (f.type === 'enum') {
    input = (
      <select {...common} value={value} onChange={(e) => setField(k, e.target.value)}>
        {f.options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    );
  } else if (f.type === 'bool') {
    input = <input {...common} type="checkbox" checked={value === 'true'} onChange={(e) => setField(k, e.target.checked ? 'true' : 'false')} />;
  } else if (f.type === 'int' || f.type === 'float') {
    // A number box: the browser's own keyboard and stepper; parseConfig still checks the range on Apply.
    input = <input {...common} type="number" step={f.type === 'int' ? 1 : 'any'} min={f.min} max={f.max} value={value} onChange={(e) => setField(k, e.target.value)} />;
  } else {
    input = <input {...common} type="text" spellCheck={false} value={value} onChange={(e) => setField(k, e.target.value)} />;
  }
  return (
    <label className={`field field-${f.type}${changed ? ' changed' : ''}`} title={tooltip(k)}>
      <span className="field-label" data-key={k}>
        {labelWords(k)}
        {changed && <span className="changed-dot" aria-label="changed, not applied" />}
      </span>
      {input}
      <span id={`tip-${k}`} className="sr-only">
        {tooltip(k)}
      </span>
    </label>
  );
});

/** The fieldset's look: none of its own (the groups inside are the boxes), laid out as the form. */
const FIELDSET_STYLE = { display: 'flex', flexDirection: 'column', gap: 8, border: 0, padding: 0, margin: 0, minWidth: 0 } as const;

/**
 * The preset's worksheet prompt: the question, and behind Reveal the answer computed from the
 * stages this run has finished (or how many more it needs). Keyed by preset, so a new preset
 * starts hidden again.
 */
function Worksheet({ preset }: { preset: string }) {
  const [shown, setShown] = useState(false);
  const stages = usePlayground((s) => s.stages);
  const teacher = usePlayground((s) => s.question);
  const q = WORKSHEET[preset];
  if (!q) return null;
  const result = shown ? answerWorksheet(preset, stages) : null;
  return (
    <div className="worksheet" data-testid="worksheet" style={{ display: 'flex', flexDirection: 'column', alignItems: 'flex-start', gap: 4, marginTop: 6 }}>
      {teacher && (
        <div className="teacher-question" data-testid="teacher-question">
          <span className="look-label">Your teacher asks:</span> {teacher}
        </div>
      )}
      <div>
        <span className="look-label">Predict, then run.</span> <span data-testid="worksheet-question">{q.question}</span>
      </div>
      {!shown ? (
        <button type="button" className="small" data-testid="worksheet-reveal" onClick={() => setShown(true)} title="Show what this run measured (write your prediction down first)">
          Reveal
        </button>
      ) : (
        result && (
          <div className="worksheet-answer" data-testid="worksheet-answer" data-ready={result.ready ? 'true' : 'false'} aria-live="polite">
            {result.ready ? (
              <>
                <span className="look-label">This run:</span> {result.answer.text}{' '}
                <span data-testid="worksheet-lesson" data-holds={q.lesson.holds(result.answer.facts) ? 'true' : 'false'}>
                  <span className="look-label">The lesson:</span> {q.lesson.says}{' '}
                  {q.lesson.holds(result.answer.facts) ? 'This run shows it.' : 'This run does not show it (the lesson is checked on the preset’s own settings and seed).'}
                </span>
              </>
            ) : (
              <span className="muted">
                Run {result.need - result.have} more stage{result.need - result.have === 1 ? '' : 's'} first: the answer reads stages 1–{result.need} ({result.have} done).
              </span>
            )}{' '}
            <button type="button" className="linkish" data-testid="worksheet-hide" onClick={() => setShown(false)} title="Hide the answer again (for the next group)">
              hide
            </button>
          </div>
        )
      )}
    </div>
  );
}

export function PresetGallery() {
  const session = useSession();
  const preset = usePlayground((s) => s.preset);
  const status = usePlayground((s) => s.status);
  const projector = usePlayground((s) => s.projector);
  const busy = status === 'busy' || status === 'running' || status === 'loading';
  const p = findPreset(preset);
  return (
    <section className="gallery" aria-label="Presets" data-testid="presets">
      <h2 className="section-title">Presets</h2>
      {projector ? (
        // On a projector the list is one line, so the question and Reveal stay on the first screen.
        <select className="preset-select" data-testid="preset-select" aria-label="Preset" value={preset} disabled={busy} onChange={(e) => void session.choosePreset(e.target.value)}>
          {PRESETS.map((x) => (
            <option key={x.name} value={x.name}>
              {x.name} ({x.kind === 'llm' ? 'LM' : 'table'})
            </option>
          ))}
        </select>
      ) : (
      <div className="gallery-list" role="listbox" aria-label="Preset">
        {PRESETS.map((x) => (
          <button
            key={x.name}
            type="button"
            role="option"
            aria-selected={x.name === preset}
            className={`preset-btn${x.name === preset ? ' selected' : ''}`}
            data-testid={`preset-${x.name}`}
            disabled={busy}
            title={x.title}
            onClick={() => void session.choosePreset(x.name)}
          >
            <span className="preset-name">{x.name}</span>
            <span className={`kind kind-${x.kind}`}>{x.kind === 'llm' ? 'LM' : 'table'}</span>
          </button>
        ))}
      </div>
      )}
      <div className="preset-card">
        <div className="preset-title" data-testid="preset-title">
          {p.title}
        </div>
        {projector && <Worksheet key={preset} preset={preset} />}
        <div className="preset-look">
          <span className="look-label">What to look for.</span> {p.lookFor}
        </div>
        {!projector && <Worksheet key={preset} preset={preset} />}
      </div>
    </section>
  );
}

/**
 * Lays a named budget (hfSeatLimits.ts BUDGETS) over the form: the settings it names change, as
 * drafts, until Apply. `real-size`: one stage of three 135M-class checkpoint seats in minutes.
 */
function BudgetButton() {
  const budget = BUDGETS['real-size'];
  const words = Object.entries(budget).map(([k, x]) => `${k} ${x}`).join(', ');
  return (
    <p className="small-note">
      <button
        type="button"
        className="small"
        data-testid="budget-real-size"
        onClick={() => Object.entries(budget).forEach(([k, x]) => setField(k as ConfigKey, String(x)))}
        title={`For three seats on 135M-class checkpoints of your own: ${words} — one stage in about three minutes on a 2-core machine, with a loose certificate (its lower bound at least 0.15 below the estimate). Apply to use it. docs/models.md, "A real-size team".`}
      >
        Real-size budget
      </button>{' '}
      <span className="muted">{words}</span>
    </p>
  );
}

export function Controls() {
  const session = useSession();
  const hide = usePlayground((s) => s.hide);
  const status = usePlayground((s) => s.status);
  const task = usePlayground((s) => s.form.task);
  const dirty = usePlayground(isDirty);
  const busy = status === 'busy' || status === 'running' || status === 'loading';
  const llm = isLlmTask(task);
  // The groups do not depend on the status: a re-render of the form for it (busy ⇄ ready around
  // every step) hands React the same elements, and only the fieldset's `disabled` changes.
  const groups = useMemo(() => {
    const visible = (k: ConfigKey) => !hide.includes(k) && !(llm && TABULAR_ONLY_KEYS.includes(k));
    return GROUPS.filter((g) => g.group !== 'model' || llm).map((g) => {
      const keys = CONFIG_KEYS.filter((k) => CONFIG[k].group === g.group && visible(k));
      if (keys.length === 0) return null;
      return (
        <details key={g.group} open={g.open} className="group" data-testid={`group-${g.group}`}>
          <summary>{g.title}</summary>
          <div className="group-fields">
            {keys.map((k) => (
              <FieldControl key={k} k={k} />
            ))}
          </div>
          {g.group === 'model' && llm && <BudgetButton />}
          {g.group === 'swap' && llm && (
            <p className="muted" data-testid="swap-checkpoint-note">
              The swap&apos;s incoming model is a shipped one (swapTo); a checkpoint of your own is not a swap target yet, and a seat holding one cannot be swapped: seat it with &ldquo;Your own checkpoint…&rdquo; on the agent&apos;s card (a fresh team) — docs/models.md.
            </p>
          )}
        </details>
      );
    });
  }, [hide, llm]);
  const preset = usePlayground((s) => s.preset);
  // A lesson page without the gallery keeps its question (a class still predicts, then runs).
  const question = hide.includes('preset') ? <Worksheet key={preset} preset={preset} /> : null;
  if (hide.includes('preset') && hide.includes('settings')) return question && <aside className="controls controls-question" aria-label="The lesson's question">{question}</aside>;
  return (
    <aside className="controls" aria-label="Experiment controls">
      {hide.includes('preset') ? question : <PresetGallery />}
      {!hide.includes('settings') && (
      <Fold name="settings" summary={<span className="section-title">Settings{dirty ? ' · changed, not applied' : ''}</span>}>
      <form
        className="settings"
        noValidate // parseConfig's message names the setting and its range; the browser's bubble would not
        onSubmit={(e) => {
          e.preventDefault();
          void session.applySettings();
        }}
      >
        <div className="settings-head">
          <span className="muted small-note">Edits apply as a fresh team.</span>
          <button type="submit" className={dirty ? 'primary small' : 'small'} data-testid="apply" disabled={busy} title="Build a fresh team with these settings (Enter)">
            {dirty ? 'Apply changes' : 'Apply'}
          </button>
        </div>
        <fieldset disabled={busy} style={FIELDSET_STYLE}>
          {groups}
        </fieldset>
      </form>
      </Fold>
      )}
    </aside>
  );
}
