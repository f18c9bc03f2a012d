/**
 * The frame every chart shares: a titled section (the question it answers), the plot or a calm
 * placeholder when there is nothing to plot yet, and a one-line "how to read this" note, the rest
 * behind "more" (what it
 * shows, what a healthy run looks like, which section of docs/method.md or docs/certificate.md it
 * illustrates). The section carries the chart's stable `data-testid` and its number of plotted
 * points in `data-points`, so browser and SSR tests can assert a non-empty series without reading
 * SVG.
 *
 * Right under the plot, a chart may pass the key of its marks (`legend`, one compact line).
 *
 * Under the note, a chart may pass its formula card (formulas.ts, FormulaCard.tsx): the frame keeps
 * the term picked there — the one piece of state a card shares with its own plot — hands it to
 * the plot (`children(width, picked)`) to highlight, and marks the section `data-highlight`.
 *
 * Also `useMeasuredWidth`: the plot's width from a ResizeObserver on its box, starting from a fixed
 * fallback so the first render (and server rendering, and headless Chromium before layout) never
 * draws at width 0 — recharts' ResponsiveContainer measures 0 there.
 *
 * Not here: any data or maths (series.ts), or any one chart's drawing.
 */
import { type ReactNode, type RefObject, useEffect, useRef, useState } from 'react';
import { FormulaCard } from './FormulaCard';
import type { BoundFormula } from './formulas';
import './charts.css';

const DEFAULT_WIDTH = 520;
export const DEFAULT_HEIGHT = 240;

/** Width of the element behind the returned ref, `fallback` until it has been measured (> 0). */
export function useMeasuredWidth<T extends HTMLElement>(fallback: number): [RefObject<T | null>, number] {
  const ref = useRef<T | null>(null);
  const [width, setWidth] = useState(fallback);
  useEffect(() => {
    const el = ref.current;
    if (!el || typeof ResizeObserver === 'undefined') return;
    const read = (w: number) => {
      const px = Math.floor(w);
      if (px > 40) setWidth((old) => (Math.abs(old - px) >= 1 ? px : old));
    };
    read(el.getBoundingClientRect().width);
    const ro = new ResizeObserver((entries) => {
      const e = entries[0];
      if (e) read(e.contentRect.width);
    });
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  return [ref, width];
}

export interface ChartFrameProps {
  readonly testid: string;
  /** The question the chart answers. */
  readonly title: ReactNode;
  /** What it shows, what healthy looks like, which docs section (docs/method.md or docs/certificate.md). */
  readonly howTo: ReactNode;
  /** Plotted points (0 shows the placeholder). */
  readonly points: number;
  /** The placeholder's words, e.g. "Step an agent to see its advantages." */
  readonly empty: ReactNode;
  /** Controls in the title row (form / mode toggles). */
  readonly actions?: ReactNode;
  /** A line of numbers or words above the plot (readout, honesty notes). */
  readonly readout?: ReactNode;
  /** The key of the plot's marks: one compact line right under the plot (VerdictMark.tsx `VerdictLegend`). */
  readonly legend?: ReactNode;
  /** The formula card under the note (formulas.ts `bindFormula`); null or absent: none. */
  readonly formula?: BoundFormula | null;
  /** Said instead of a card when there is no formula to show (e.g. a form the run does not record). */
  readonly formulaNote?: ReactNode;
  /** Draws the plot at the measured width; `picked` is the term picked in the formula card (to highlight). */
  readonly children: (width: number, picked: string | null) => ReactNode;
  readonly width?: number;
  readonly className?: string;
}

export function ChartFrame({ testid, title, howTo, points, empty, actions, readout, legend, formula, formulaNote, children, width, className }: ChartFrameProps) {
  const [ref, measured] = useMeasuredWidth<HTMLDivElement>(width ?? DEFAULT_WIDTH);
  const [picked, setPicked] = useState<string | null>(null);
  const w = width ?? measured;
  const hl = formula && points > 0 ? picked : null;
  return (
    <section className={`chart ${className ?? ''}`} data-testid={testid} data-points={points} data-highlight={hl ?? undefined} aria-label={typeof title === 'string' ? title : undefined}>
      <header className="chart-head">
        <h3 className="chart-title">{title}</h3>
        {actions && <div className="chart-actions">{actions}</div>}
      </header>
      {points > 0 && readout && <div className="chart-readout">{readout}</div>}
      <div className="chart-plot" ref={ref}>
        {points > 0 ? children(w, hl) : <div className="chart-empty" data-testid={`${testid}-empty`}>{empty}</div>}
      </div>
      {points > 0 && legend && <div className="chart-key">{legend}</div>}
      <HowTo text={howTo} />
      {points > 0 && formula && <FormulaCard formula={formula} picked={hl} onPick={setPicked} />}
      {points > 0 && !formula && formulaNote && <p className="formula-card-none muted">{formulaNote}</p>}
    </section>
  );
}

/**
 * "How to read this", one line: the rest behind "more" (one click), so a card shows its question
 * and its picture first.
 */
export function HowTo({ text }: { text: ReactNode }) {
  const [open, setOpen] = useState(false);
  return (
    <div className={`chart-howto${open ? ' open' : ''}`}>
      <p className="chart-howto-text">
        <span className="chart-howto-label">How to read this:</span> {text}
      </p>
      <button type="button" className="linkish chart-howto-more" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open ? 'less' : 'more'}
      </button>
    </div>
  );
}

/** A two- or three-way toggle for the title row (form, mode), as a radio group of buttons. */
export function Toggle<T extends string>({ value, options, onChange, label }: { value: T; options: readonly { value: T; label: string; title?: string }[]; onChange: (v: T) => void; label: string }) {
  return (
    <div className="chart-toggle" role="radiogroup" aria-label={label}>
      {options.map((o) => (
        <button key={o.value} type="button" role="radio" aria-checked={o.value === value} className={o.value === value ? 'on' : ''} title={o.title} onClick={() => onChange(o.value)}>
          {o.label}
        </button>
      ))}
    </div>
  );
}
