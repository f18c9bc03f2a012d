/**
 * A chart's formula card: under its "how to read this", a disclosure that opens on the formula the
 * chart draws, typeset by KaTeX, with the run's numbers substituted term by term (formulas.ts binds
 * each number to its metric key). Each number carries data-metric, data-value (the raw number) and
 * data-term; clicking one — or Enter / Space on it — picks that term, and the chart highlights the
 * bar or series that draws it (the frame keeps the pick: ChartFrame.tsx). The card cites the docs
 * section it restates.
 *
 * KaTeX is loaded on the first open (./katexRender.ts, a chunk of its own); until then, and in
 * server rendering, the card is only its summary line. A formula that does not typeset shows its
 * TeX and the error instead of breaking the chart.
 *
 * Not here: the formulas themselves (formulas.ts) or what a highlight looks like (each chart).
 */
import { useEffect, useRef, useState, type KeyboardEvent, type MouseEvent } from 'react';
import type { BoundFormula } from './formulas';

export interface FormulaCardProps {
  readonly formula: BoundFormula;
  /** The term picked in this chart (null: none). */
  readonly picked: string | null;
  readonly onPick: (term: string | null) => void;
}

type Rendered = { tex: string; html: string } | { tex: string; error: string };

export function FormulaCard({ formula, picked, onPick }: FormulaCardProps) {
  const [open, setOpen] = useState(false);
  const [out, setOut] = useState<Rendered | null>(null);
  const box = useRef<HTMLDivElement | null>(null);
  const tex = formula.tex;

  useEffect(() => {
    if (!open) return;
    let live = true;
    import('./katexRender')
      .then(({ renderTex }) => {
        if (!live) return;
        try {
          setOut({ tex, html: renderTex(tex) });
        } catch (e) {
          setOut({ tex, error: e instanceof Error ? e.message : String(e) });
        }
      })
      .catch((e: unknown) => live && setOut({ tex, error: `KaTeX did not load: ${e instanceof Error ? e.message : String(e)}` }));
    return () => {
      live = false;
    };
  }, [open, tex]);

  // The typeset numbers become the card's buttons: focusable, pressed when picked.
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    // KaTeX hides its HTML from assistive technology and reads out its MathML instead; here the
    // HTML holds the focusable numbers, so it is the one read out and the MathML twin is hidden.
    for (const h of el.querySelectorAll<HTMLElement>('.katex-html')) h.removeAttribute('aria-hidden');
    for (const m of el.querySelectorAll<HTMLElement>('.katex-mathml')) m.setAttribute('aria-hidden', 'true');
    for (const t of el.querySelectorAll<HTMLElement>('[data-term]')) {
      const on = t.dataset.term === picked;
      t.setAttribute('role', 'button');
      t.tabIndex = 0;
      t.setAttribute('aria-pressed', on ? 'true' : 'false');
      t.title = `${t.dataset.metric}: ${t.dataset.value} — click to highlight it in the chart`;
      t.classList.toggle('picked', on);
    }
  }, [out, picked]);

  const pick = (target: EventTarget | null) => {
    const t = target instanceof Element ? target.closest<HTMLElement>('[data-term]') : null;
    if (t?.dataset.term) onPick(t.dataset.term === picked ? null : t.dataset.term);
  };
  const ready = out !== null && out.tex === tex;
  return (
    <details className="formula-card" data-testid="formula-card" data-formula={formula.def.id} onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>
        <span className="formula-card-label">Formula with these numbers</span> <span className="muted">({formula.def.docs})</span>
      </summary>
      {open && (
        <div className="formula-card-body">
          <div className="formula-card-title">{formula.def.title}</div>
          {!ready ? (
            <div className="muted">typesetting…</div>
          ) : 'error' in out ? (
            <div className="chart-warn" data-testid="formula-error">
              The formula did not typeset ({out.error}): <code>{out.tex}</code>
            </div>
          ) : (
            <div
              ref={box}
              className="formula-card-tex"
              data-testid="formula-tex"
              onClick={(e: MouseEvent) => pick(e.target)}
              onKeyDown={(e: KeyboardEvent) => {
                if (e.key === 'Enter' || e.key === ' ') {
                  e.preventDefault();
                  pick(e.target);
                }
              }}
              dangerouslySetInnerHTML={{ __html: out.html }}
            />
          )}
          <p className="formula-card-note">
            {formula.def.note} Click a number to highlight it in the chart.
          </p>
        </div>
      )}
    </details>
  );
}
