/**
 * A panel that folds away (a <details>), closed by default so the first screen keeps the step
 * controls, the timeline, the J chart and the game in view; its open state is remembered in this
 * browser (localStorage) per fold name. Its content stays mounted while folded (a file input or a
 * draft setting inside keeps its state).
 *
 * Not here: what the panel holds.
 */
import { type ReactNode, useState } from 'react';

const KEY = 'sat-playground.fold.';

function remembered(name: string, fallback: boolean): boolean {
  try {
    const v = globalThis.localStorage?.getItem(KEY + name);
    return v === null || v === undefined ? fallback : v === 'open';
  } catch {
    return fallback;
  }
}

export function Fold({ name, summary, children, className, open: initial = false }: { name: string; summary: ReactNode; children: ReactNode; className?: string; open?: boolean }) {
  const [open, setOpen] = useState(() => remembered(name, initial));
  return (
    <details
      className={`fold ${className ?? ''}`}
      data-testid={`fold-${name}`}
      open={open}
      onToggle={(e) => {
        const now = (e.currentTarget as HTMLDetailsElement).open;
        if (now === open) return;
        setOpen(now);
        try {
          globalThis.localStorage?.setItem(KEY + name, now ? 'open' : 'closed');
        } catch {
          // storage refused (private mode): the fold still works, it is just not remembered
        }
      }}
    >
      <summary className="fold-summary">{summary}</summary>
      <div className="fold-body">{children}</div>
    </details>
  );
}
