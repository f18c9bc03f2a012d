/**
 * The lesson-link builder (opened from Copy link): a teacher picks the preset, the seed, the stage
 * the page opens at, the panels and settings to hide and a question of their own, sees the reduced
 * page in a live preview (the link itself, opened in a frame with `?lesson-preview`, which neither
 * autosaves nor writes its address bar), and copies the link. The link is the share link (share.ts:
 * `<key>_hide`, `step`, `question`, `projector`), so what the preview shows is what a class opens.
 *
 * Not here: the link format (share.ts), opening it (boot.ts), the panels' names (panels.ts).
 */
import { useEffect, useState } from 'react';
import { CONFIG_KEYS } from '../../sat/config';
import { findPreset, PRESETS, presetConfig } from '../../sat/presets';
import { LESSON_PREVIEW } from '../boot';
import { describeError } from '../errorText';
import { PANELS, PANEL_NAMES } from '../panels';
import { encodeShare, makeShareState, MAX_SHARE_QUESTION } from '../share';
import { usePlayground } from '../store';

/** What can be hidden: the gallery, then the panels (panels.ts). */
const PANEL_CHOICES: readonly { name: string; what: string }[] = [{ name: 'preset', what: 'the preset gallery (the question stays)' }, ...PANEL_NAMES.map((n) => ({ name: n, what: PANELS[n] }))];

/** The builder's choices, as a link's parts. */
interface Lesson {
  preset: string;
  seed: string;
  stage: string;
  hide: readonly string[];
  question: string;
  projector: boolean;
}

/** The lesson's link (the page's address with the lesson's hash), or the reason there is none. */
async function lessonLink(l: Lesson): Promise<{ url: string } | { error: string }> {
  try {
    const cfg = presetConfig(l.preset, { seed: l.seed });
    const stage = Number(l.stage);
    if (!Number.isInteger(stage) || stage < 0 || stage > cfg.stages) return { error: `The stage to open at must be a whole number from 0 to ${cfg.stages} (this preset's stages).` };
    const hash = await encodeShare(makeShareState(cfg, { preset: l.preset, hide: l.hide, question: l.question, projector: l.projector, ...(stage > 0 ? { step: { stage } } : {}) }));
    return { url: `${location.origin}${location.pathname}${hash}` };
  } catch (e) {
    return { error: describeError(e, 'The link was not made.') };
  }
}

/** The preview's address: the same link, opened as a preview. */
const previewOf = (url: string) => {
  const u = new URL(url);
  u.search = `?${LESSON_PREVIEW}`;
  return u.href;
};

export function LessonBuilder({ onClose }: { onClose: () => void }) {
  // It starts from the page as it is: its preset, seed, stage, hidden panels, question and mode.
  const [lesson, setLesson] = useState<Lesson>(() => {
    const s = usePlayground.getState();
    return { preset: s.preset, seed: String(s.config?.seed ?? presetConfig(s.preset).seed), stage: String(s.stages.length), hide: s.hide, question: s.question ?? '', projector: s.projector };
  });
  const [made, setMade] = useState<{ url: string } | { error: string } | null>(null);
  const [preview, setPreview] = useState<string | null>(null);
  const set = (patch: Partial<Lesson>) => setLesson((l) => ({ ...l, ...patch }));
  const toggle = (name: string, on: boolean) => set({ hide: on ? [...new Set([...lesson.hide, name])] : lesson.hide.filter((h) => h !== name) });

  useEffect(() => {
    let live = true;
    void lessonLink(lesson).then((r) => live && setMade(r));
    return () => {
      live = false;
    };
  }, [lesson]);
  // The preview reloads a moment after the last change, not on every keystroke.
  useEffect(() => {
    if (!made || !('url' in made)) return;
    const t = setTimeout(() => setPreview(previewOf(made.url)), 500);
    return () => clearTimeout(t);
  }, [made]);

  const copy = async () => {
    if (!made || !('url' in made)) return;
    try {
      await navigator.clipboard.writeText(made.url);
      usePlayground.setState({ notice: 'Lesson link copied: it opens the reduced page the preview shows.' });
    } catch {
      usePlayground.setState({ notice: 'The lesson link is in the box: copy it from there (this page may not use the clipboard).' });
    }
  };

  return (
    <div className="lesson-builder" data-testid="lesson-builder" role="group" aria-label="Lesson link builder">
      <div className="lesson-form">
        <label className="field">
          <span className="field-label">Preset</span>
          <select data-testid="lesson-preset" value={lesson.preset} onChange={(e) => set({ preset: e.target.value, seed: String(presetConfig(e.target.value).seed), stage: '0' })}>
            {PRESETS.map((p) => (
              <option key={p.name} value={p.name}>
                {p.name}
              </option>
            ))}
          </select>
        </label>
        <label className="field">
          <span className="field-label">Seed</span>
          <input data-testid="lesson-seed" type="number" min={0} step={1} value={lesson.seed} onChange={(e) => set({ seed: e.target.value })} />
        </label>
        <label className="field">
          <span className="field-label">Open at stage</span>
          <input data-testid="lesson-stage" type="number" min={0} step={1} value={lesson.stage} onChange={(e) => set({ stage: e.target.value })} title="The page replays the run to the end of this stage (0: a fresh team)" />
        </label>
        <label className="field lesson-question">
          <span className="field-label">Your question (optional)</span>
          <textarea data-testid="lesson-question" rows={2} maxLength={MAX_SHARE_QUESTION} value={lesson.question} placeholder={`e.g. ${findPreset(lesson.preset).title}: what will J do in the next 5 stages?`} onChange={(e) => set({ question: e.target.value })} />
        </label>
        <label className="lesson-check">
          <input type="checkbox" data-testid="lesson-projector" checked={lesson.projector} onChange={(e) => set({ projector: e.target.checked })} /> open in projector mode
        </label>
        <fieldset className="lesson-hide">
          <legend>Hide</legend>
          {PANEL_CHOICES.map((c) => (
            <label key={c.name} className="lesson-check" title={c.what}>
              <input type="checkbox" data-testid={`lesson-hide-${c.name}`} checked={lesson.hide.includes(c.name)} onChange={(e) => toggle(c.name, e.target.checked)} /> {c.name}
            </label>
          ))}
          <details>
            <summary>single settings</summary>
            {CONFIG_KEYS.map((k) => (
              <label key={k} className="lesson-check">
                <input type="checkbox" data-testid={`lesson-hide-${k}`} checked={lesson.hide.includes(k)} onChange={(e) => toggle(k, e.target.checked)} /> {k}
              </label>
            ))}
          </details>
        </fieldset>
      </div>
      <div className="lesson-out">
        <div className="lesson-head">
          <strong>Lesson link</strong>
          <button type="button" className="small" data-testid="lesson-close" onClick={onClose}>
            Close
          </button>
        </div>
        {made && 'error' in made && (
          <p className="lesson-error" role="alert" data-testid="lesson-error">
            {made.error}
          </p>
        )}
        {made && 'url' in made && (
          <div className="lesson-link-row">
            <input className="share-link" readOnly data-testid="lesson-link" value={made.url} onFocus={(e) => e.currentTarget.select()} aria-label="Lesson link" />
            <button type="button" className="small primary" data-testid="lesson-copy" onClick={() => void copy()}>
              Copy
            </button>
          </div>
        )}
        <div className="lesson-preview-box">
          {preview ? <iframe data-testid="lesson-preview" title="Preview of the lesson page" src={preview} width={1280} height={720} /> : <p className="muted">The preview appears here.</p>}
        </div>
        <p className="muted">Preview at 1280×720, scaled down: the page a class opens from this link (it does not touch your own run).</p>
      </div>
    </div>
  );
}
