/**
 * KaTeX and its stylesheet, loaded only when a formula card is first opened (FormulaCard.tsx
 * imports this module dynamically, so Vite puts KaTeX, its CSS and its fonts — local files from the
 * build, nothing fetched from elsewhere — in a chunk of their own, off the page's first load).
 *
 * Not here: the formulas (formulas.ts) or the card around them (FormulaCard.tsx).
 */
import katex from 'katex';
import 'katex/dist/katex.min.css';
import { KATEX_OPTIONS } from './formulas';

/** The card's TeX as HTML (throws KaTeX's ParseError on a malformed formula). */
export function renderTex(tex: string): string {
  return katex.renderToString(tex, KATEX_OPTIONS);
}
