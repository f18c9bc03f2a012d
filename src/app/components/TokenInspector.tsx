/**
 * The token inspector (docs/method.md §9b.1): for the language agent step in view, each of the
 * updated agent's tokens in its training batch, coloured by its contribution w·Ã·log r (green: the
 * update moved it the way its advantage asked; red: against), a dashed outline where its term is
 * clipped at π_new, and a bar under it for its per-state KL against δ (full at δ, red beyond).
 * Hovering or focusing a token shows log π_new, log π_cur, the ratio, the clip decision and the KL
 * in the readout line; clicking it (or Enter) shows the next-token distribution before and after
 * the update (the 8 likeliest tokens under either policy and the rest).
 *
 * Keyboard: Tab reaches the tokens as one stop; ← → move between tokens, Home / End jump to the
 * first / last, Enter or Space opens the distribution, Escape closes it.
 *
 * The numbers come from the agent's worker, asked once when the inspector opens and again when the
 * step in view changes (Session.inspectStep → AgentApi.inspect); nothing is shipped with the steps.
 *
 * Not here: the numbers (src/sat/inspect.ts), the transcripts around it (charts/TranscriptTable.tsx).
 */
import { type CSSProperties, type KeyboardEvent, useEffect, useMemo, useRef, useState } from 'react';
import { tokenizer } from '../../model/tokenizer';
import { topTokens, type EpisodeView, type InspectAnswer, type TokenInspection, type TokenView } from '../../sat/inspect';
import { fixed3, sci, signed3 } from '../format';
import { useSession } from '../sessionContext';
import type { StepRef } from '../stepRef';
import { usePlayground } from '../store';
import { agentColor } from '../theme';
import './TokenInspector.css';

/** Tokens shown in the next-token chart (plus "rest"). */
const TOP_K = 8;

/** A token as text: visible stand-ins for space and newline, special tokens by their spelling. */
export function tokenText(id: number): string {
  const s = tokenizer.tokenString(id);
  return s === ' ' ? '␣' : s === '\n' ? '⏎' : s;
}

function decode(ids: ArrayLike<number>): string {
  return Array.from(ids, (id) => tokenizer.tokenString(id)).join('');
}

/**
 * A context as a person reads it: the turn markers as "agent i:", the separator as a bar, the
 * padding and sequence markers dropped — "13 | agent 1: 101 | agent 2:" for ">13<sep><a1>101<sep><a2>".
 */
export function contextText(ids: ArrayLike<number>): string {
  let out = '';
  for (const id of Array.from(ids)) {
    const s = tokenizer.tokenString(id);
    const turn = /^<a(\d)>$/.exec(s);
    if (turn) out += `${out && !out.endsWith(' ') ? ' ' : ''}agent ${turn[1]}: `;
    else if (s === '<sep>') out += ' | ';
    else if (s === '<pad>' || s === '<bos>' || s === '<eos>') continue;
    else out += s;
  }
  return out.replace(/\s+/g, ' ').trim();
}

/** Episodes listed per page of the inspector (every episode of the batch is reachable by paging). */
export const EPISODES_PER_PAGE = 12;
/** Asked of the worker: every episode of the batch (a page's batch is at most B·G). */
const ALL_EPISODES = 1 << 16;

/** A number to 4 significant digits with the page's minus sign. */
function num(x: number): string {
  return Number.isFinite(x) ? x.toPrecision(4).replace(/-/g, '\u2212') : '—';
}

/** The token's colour: green for a positive contribution, red for a negative one, stronger with |c|. */
function tint(c: number, max: number): string {
  if (!(max > 0) || c === 0) return 'transparent';
  const a = Math.min(1, Math.sqrt(Math.abs(c) / max)) * 0.75;
  return c > 0 ? `rgba(0, 158, 115, ${a.toFixed(3)})` : `rgba(213, 94, 0, ${a.toFixed(3)})`;
}

interface Flat {
  readonly t: TokenView;
  readonly ep: EpisodeView;
}

/**
 * What a token's colour shows. `moved` (the default): w·Ã·log r_k, how the update moved the token
 * in the direction its advantage asked — 0 for an unmoved token, and a message's tokens add up to
 * its sequence term. `term`: w·Ã·r_k, the advantage times the ratio, i.e. the token's term of the
 * unclipped surrogate (its sign is the advantage's; its size grows as the update raises the token).
 */
export type ColourBy = 'moved' | 'term';

/** The value a token is coloured by (see ColourBy). */
export function colourValue(f: Flat, by: ColourBy): number {
  return by === 'moved' ? f.t.contribution : f.ep.weight * f.ep.adv * f.t.ratio;
}

function Readout({ f, ins }: { f: Flat | null; ins: TokenInspection }) {
  if (!f) return <div className="ti-readout muted" data-testid="inspector-details">Hover or focus a token to see its numbers; click it for its next-token distribution.</div>;
  const { t, ep } = f;
  const seq = ins.objective === 'sequence';
  const why = seq ? `episode ratio r_e = ${num(ep.ratio)}` : `ratio ${num(t.ratio)}`;
  return (
    <div
      className="ti-readout"
      data-testid="inspector-details"
      data-k={t.k}
      data-logp-new={t.logpNew}
      data-logp-cur={t.logpCur}
      data-ratio={t.ratio}
      data-kl={t.kl}
      data-clipped={t.clipped ? 1 : 0}
      data-episode-ratio={ep.ratio}
      aria-live="polite"
    >
      <code className="ti-tok">{tokenText(t.token)}</code>
      <span>
        log π_new <b data-testid="inspector-logp-new">{num(t.logpNew)}</b>
      </span>
      <span>
        log π_cur <b data-testid="inspector-logp-cur">{num(t.logpCur)}</b>
      </span>
      <span>
        ratio <b data-testid="inspector-ratio">{num(t.ratio)}</b>
      </span>
      {seq && (
        <span title="The sequence objective's one ratio for the episode: the product of the agent's token ratios in it">
          r_e <b>{num(ep.ratio)}</b>
        </span>
      )}
      <span data-testid="inspector-clipped" title={`Clipped when Ã > 0 and the ratio exceeds 1 + ε_high, or Ã < 0 and it is below 1 − ε_low (docs/method.md §5.3), read at π_new; here Ã = ${fixed3(ep.adv)} and the ${why}`}>
        {t.clipped ? 'clipped' : 'not clipped'}
      </span>
      <span>
        KL <b data-testid="inspector-kl">{sci(t.kl)}</b> {t.kl > ins.delta ? '>' : '≤'} δ = {sci(ins.delta)}
      </span>
      <span>
        w·Ã·log r <b>{signed3(t.contribution)}</b>
      </span>
    </div>
  );
}

function DistChart({ f, ins, onClose }: { f: Flat; ins: TokenInspection; onClose: () => void }) {
  const bars = useMemo(() => topTokens(ins.pCur, ins.pNew, f.t.row, ins.vocab, TOP_K, f.t.token), [f, ins]);
  // The state s: the message's context and its tokens before this one.
  const m = f.ep.messages.find((x) => x.tokens.includes(f.t))!;
  const prefix = decode(m.context) + decode(m.tokens.slice(0, m.tokens.indexOf(f.t)).map((t) => t.token));
  const max = Math.max(...bars.map((b) => Math.max(b.pCur, b.pNew)), 1e-12);
  return (
    <div className="ti-dist" data-testid="inspector-dist" role="region" aria-label="Next-token distribution before and after the update">
      <div className="ti-dist-head">
        <span>
          Next token after <code title={prefix}>…{prefix.slice(-20)}</code>: π_cur (grey) and π_new (agent colour); the token it wrote is marked ▸
        </span>
        <button type="button" className="small" onClick={onClose} data-testid="inspector-dist-close">
          Close
        </button>
      </div>
      <table className="ti-bars">
        <tbody>
          {bars.map((b) => (
            <tr key={b.token ?? 'rest'} data-testid="inspector-bar" data-token={b.token ?? 'rest'}>
              <th scope="row">
                {b.token === f.t.token ? '▸ ' : ''}
                <code>{b.token === null ? 'rest' : tokenText(b.token)}</code>
              </th>
              <td className="ti-bar-cell">
                <div className="ti-bar cur" style={{ width: `${(100 * b.pCur) / max}%` }} />
                <div className="ti-bar new" style={{ width: `${(100 * b.pNew) / max}%` }} />
              </td>
              <td className="num">
                {fixed3(b.pCur)} → {fixed3(b.pNew)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Which episodes the inspector lists: by the sign of Ã, and by reward when the rewards are known. */
export interface EpisodeFilter {
  readonly adv: 'all' | 'positive' | 'negative' | 'zero';
  /** A reward value (as its key `String(r)`), or 'all'. */
  readonly reward: string;
}

const ALL: EpisodeFilter = { adv: 'all', reward: 'all' };

/** Whether episode `ep` passes `f` (`rewards[e]`: the episode's reward, when known). */
export function keepsEpisode(ep: EpisodeView, f: EpisodeFilter, rewards?: readonly number[]): boolean {
  const a = ep.adv;
  if (f.adv === 'positive' && !(a > 0)) return false;
  if (f.adv === 'negative' && !(a < 0)) return false;
  if (f.adv === 'zero' && a !== 0) return false;
  if (f.reward !== 'all' && (rewards?.[ep.e] === undefined || String(rewards[ep.e]) !== f.reward)) return false;
  return true;
}

/** An episode to show: its index in the batch, and a count that makes the same one again a new request. */
export interface EpisodeTarget {
  readonly e: number;
  readonly n: number;
}

export interface InspectionViewProps {
  readonly ins: TokenInspection;
  /** Per episode of the batch (by index), its reward, when the caller knows it: the reward filter. */
  readonly rewards?: readonly number[];
  /** Jump to this episode (the transcripts' link). */
  readonly target?: EpisodeTarget | null;
}

/** The inspection drawn (exported for server-rendered tests; the page renders it inside TokenInspector). */
export function InspectionView({ ins, rewards, target }: InspectionViewProps) {
  const [filter, setFilter] = useState<EpisodeFilter>(ALL);
  const known = rewards && rewards.length === ins.nEpisodes ? rewards : undefined;
  const rewardValues = useMemo(() => (known ? [...new Set(ins.episodes.map((ep) => known[ep.e]!))].sort((x, y) => x - y) : []), [ins, known]);
  const listed = useMemo(() => ins.episodes.filter((ep) => keepsEpisode(ep, filter, known)), [ins, filter, known]);
  const flat = useMemo<Flat[]>(() => listed.flatMap((ep) => ep.messages.flatMap((m) => m.tokens.map((t) => ({ t, ep })))), [listed]);
  const [focus, setFocus] = useState(0);
  /** The token whose numbers the readout shows: the last hovered or focused (it stays, so the layout never jumps). */
  const [hover, setHover] = useState<number | null>(null);
  const [open, setOpen] = useState<number | null>(null);
  const [colourBy, setColourBy] = useState<ColourBy>('moved');
  const maxColour = useMemo(() => flat.reduce((m, f) => Math.max(m, Math.abs(colourValue(f, colourBy))), 0), [flat, colourBy]);
  const buttons = useRef<(HTMLButtonElement | null)[]>([]);
  const index = useMemo(() => new Map(flat.map((f, i) => [f.t, i])), [flat]);
  const shown = hover ?? (open !== null ? open : null);
  const [page, setPage] = useState(0);
  const pages = Math.ceil(listed.length / EPISODES_PER_PAGE);
  /** The page that lists flat token i (its episode's place in the list). */
  const pageOf = useMemo(() => {
    const at = new Map(listed.map((ep, k) => [ep, Math.floor(k / EPISODES_PER_PAGE)]));
    return (i: number) => at.get(flat[i]!.ep) ?? 0;
  }, [listed, flat]);
  /** The episode jumped to (1-based in the box), and what the jump found. */
  const [jumpText, setJumpText] = useState('');
  const [jumped, setJumped] = useState<{ e: number; found: boolean } | null>(null);
  const episodesBox = useRef<HTMLDivElement | null>(null);
  const choose = (f: EpisodeFilter) => {
    setFilter(f);
    setPage(0);
    setOpen(null);
    setHover(null);
    setFocus(0);
  };
  /** Shows episode e: the filters cleared if they hide it, its page, the episode scrolled to and marked. */
  const jumpTo = (e: number) => {
    const ep = ins.episodes.find((x) => x.e === e);
    setJumped({ e, found: !!ep });
    if (!ep) return;
    const list = keepsEpisode(ep, filter, known) ? listed : ins.episodes;
    if (list !== listed) choose(ALL);
    setPage(Math.floor(list.indexOf(ep) / EPISODES_PER_PAGE));
    requestAnimationFrame(() => episodesBox.current?.querySelector(`[data-e="${e}"]`)?.scrollIntoView({ block: 'nearest' }));
  };
  const lastTarget = useRef<EpisodeTarget | null>(null);
  useEffect(() => {
    if (!target || target === lastTarget.current) return;
    lastTarget.current = target;
    setJumpText(String(target.e + 1));
    jumpTo(target.e);
    // A new target object is a new request; the rest is read fresh.
  }, [target]);

  const move = (i: number) => {
    const j = Math.max(0, Math.min(flat.length - 1, i));
    setFocus(j);
    if (pageOf(j) !== page) {
      setPage(pageOf(j));
      // The button exists once the page is drawn.
      requestAnimationFrame(() => buttons.current[j]?.focus());
    } else buttons.current[j]?.focus();
  };
  const onKey = (e: KeyboardEvent) => {
    const keys: Record<string, () => void> = {
      ArrowRight: () => move(focus + 1),
      ArrowLeft: () => move(focus - 1),
      Home: () => move(0),
      End: () => move(flat.length - 1),
      Escape: () => setOpen(null),
    };
    const f = keys[e.key];
    // The page's own shortcuts (→ steps an agent, Space runs) must not fire from inside the tokens.
    if (f || e.key === ' ' || e.key === 'Enter') e.stopPropagation();
    if (f) {
      e.preventDefault();
      f();
    }
  };
  const color = agentColor(ins.agent);
  return (
    <div className="ti" style={{ '--agent': color } as CSSProperties}>
      <div className="ti-summary" data-testid="inspector-summary">
        <span>
          Agent {ins.agent}&apos;s update, objective = {ins.objective}
          {ins.objective === 'token' ? ` (${ins.tokenAgg})` : ''}, ε = {ins.epsLow}/{ins.epsHigh}, δ = {sci(ins.delta)}
        </span>
        <span>
          {ins.nTokens} tokens in {ins.nEpisodes} episodes; clipped at π_new: {(100 * ins.clipFrac).toFixed(0)} % of {ins.objective === 'sequence' ? 'episodes' : 'tokens'}; KL mean {sci(ins.klMean)}, max {sci(ins.klMax)}, {(100 * ins.violRate).toFixed(0)} % of states &gt; δ
        </span>
        {ins.rejected && <span className="ti-rejected">The update was rejected: π_new = π_cur, every ratio is 1.</span>}
      </div>
      <div className="ti-legend muted">
        <label>
          colour by{' '}
          <select data-testid="inspector-colour" value={colourBy} onChange={(e) => setColourBy(e.target.value as ColourBy)}>
            <option value="moved">w·Ã·log r (how the update moved it)</option>
            <option value="term">w·Ã·r (advantage × ratio)</option>
          </select>
        </label>
        <span className="ti-swatch" style={{ background: tint(1, 1) }} /> {colourBy === 'moved' ? 'moved as its advantage asked' : 'positive advantage'}
        <span className="ti-swatch" style={{ background: tint(-1, 1) }} /> {colourBy === 'moved' ? 'against it' : 'negative'}
        <span className="ti-swatch clipped" /> clipped
        <span className="ti-kl-sample" /> KL / δ
      </div>
      <Readout f={shown !== null ? flat[shown]! : null} ins={ins} />
      <div className="ti-filters" data-testid="inspector-filters">
        <label>
          episodes{' '}
          <select data-testid="inspector-filter-adv" value={filter.adv} onChange={(e) => choose({ ...filter, adv: e.target.value as EpisodeFilter['adv'] })}>
            <option value="all">every advantage</option>
            <option value="positive">Ã &gt; 0 (better than its group)</option>
            <option value="negative">Ã &lt; 0 (worse)</option>
            <option value="zero">Ã = 0</option>
          </select>
        </label>
        {rewardValues.length > 0 && (
          <label>
            reward{' '}
            <select data-testid="inspector-filter-reward" value={filter.reward} onChange={(e) => choose({ ...filter, reward: e.target.value })}>
              <option value="all">any</option>
              {rewardValues.map((r) => (
                <option key={r} value={String(r)}>
                  {fixed3(r)}
                </option>
              ))}
            </select>
          </label>
        )}
        <form
          className="ti-jump"
          onSubmit={(e) => {
            e.preventDefault();
            const n = Number(jumpText);
            if (Number.isInteger(n) && n >= 1) jumpTo(n - 1);
          }}
        >
          <label>
            episode{' '}
            <input data-testid="inspector-jump" type="number" inputMode="numeric" min={1} max={ins.nEpisodes} value={jumpText} onChange={(e) => setJumpText(e.target.value)} />
          </label>{' '}
          <button type="submit" className="small" data-testid="inspector-jump-go">
            Show
          </button>
        </form>
        <span className="muted" data-testid="inspector-listed">
          {listed.length} of {ins.episodes.length} episodes listed{jumped && !jumped.found ? ` · agent ${ins.agent} wrote no token in episode ${jumped.e + 1}` : ''}
        </span>
      </div>
      {pages > 1 && (
        <div className="ti-pages" data-testid="inspector-pages">
          <button type="button" className="small" data-testid="inspector-prev" disabled={page === 0} onClick={() => setPage(page - 1)}>
            ◂ earlier
          </button>
          <span>
            episodes {page * EPISODES_PER_PAGE + 1}–{Math.min(listed.length, (page + 1) * EPISODES_PER_PAGE)} of {listed.length}
          </span>
          <button type="button" className="small" data-testid="inspector-next" disabled={page >= pages - 1} onClick={() => setPage(page + 1)}>
            later ▸
          </button>
        </div>
      )}
      <div ref={episodesBox} className="ti-episodes" role="group" aria-label="The agent's tokens: arrow keys move, Enter shows the distribution" onKeyDown={onKey}>
        {listed.slice(page * EPISODES_PER_PAGE, (page + 1) * EPISODES_PER_PAGE).map((ep) => (
          <div key={ep.e} className={`ti-episode${jumped?.found && jumped.e === ep.e ? ' target' : ''}`} data-testid="inspector-episode" data-e={ep.e} data-adv={ep.adv} data-target={jumped?.found && jumped.e === ep.e ? 1 : undefined}>
            <div className="ti-ep-head muted">
              episode {ep.e + 1}: Ã = {fixed3(ep.adv)}, w = {fixed3(ep.weight)}, r_e = {num(ep.ratio)}
              {known ? `, reward ${fixed3(known[ep.e]!)}` : ''}
              {ins.objective === 'sequence' && ep.clipped ? ' (clipped)' : ''}
            </div>
            {ep.messages.map((m, mi) => (
              <div key={mi} className="ti-msg">
                <span className="ti-context" title={decode(m.context)}>
                  {contextText(m.context)}
                </span>
                {m.tokens.map((t) => {
                  const i = index.get(t)!;
                  return (
                    <button
                      key={t.k}
                      type="button"
                      ref={(el) => {
                        buttons.current[i] = el;
                      }}
                      className={`ti-token${t.clipped ? ' clipped' : ''}${open === i ? ' open' : ''}`}
                      style={{ background: tint(colourValue(flat[i]!, colourBy), maxColour) }}
                      data-colour={colourValue(flat[i]!, colourBy)}
                      tabIndex={i === focus ? 0 : -1}
                      data-testid="inspector-token"
                      data-k={t.k}
                      aria-label={`${tokenText(t.token)}: ratio ${num(t.ratio)}, ${t.clipped ? 'clipped' : 'not clipped'}, KL ${sci(t.kl)}`}
                      onMouseEnter={() => setHover(i)}
                      onFocus={() => {
                        setFocus(i);
                        setHover(i);
                      }}
                      onClick={() => setOpen(open === i ? null : i)}
                    >
                      {tokenText(t.token)}
                      <span className={`ti-kl${t.kl > ins.delta ? ' over' : ''}`} style={{ width: `${Math.min(1, t.kl / ins.delta) * 100}%` }} />
                    </button>
                  );
                })}
              </div>
            ))}
          </div>
        ))}
      </div>
      {open !== null && flat[open] && <DistChart f={flat[open]!} ins={ins} onClose={() => setOpen(null)} />}
    </div>
  );
}

export interface TokenInspectorProps {
  /** The agent step in view (null before the first). */
  readonly step: Required<StepRef> | null;
  /** Per episode of the step's batch, its reward (the transcripts'), for the reward filter. */
  readonly rewards?: readonly number[];
  /** An episode to open the inspector at (a transcript row's link). */
  readonly target?: EpisodeTarget | null;
}

/** The "Inspect tokens" toggle and, when open, the inspection of the step in view. */
export function TokenInspector({ step, rewards, target }: TokenInspectorProps) {
  const session = useSession();
  const status = usePlayground((s) => s.status);
  const idle = status !== 'busy' && status !== 'running' && status !== 'loading';
  const [open, setOpen] = useState(false);
  useEffect(() => {
    if (target) setOpen(true);
  }, [target]);
  const [answer, setAnswer] = useState<{ key: string; a: InspectAnswer } | null>(null);
  const key = step ? `${step.stage}.${step.agent}` : '';
  useEffect(() => {
    if (!open || !step || !idle) return;
    let live = true;
    setAnswer(null); // never show an earlier answer (another experiment's step of the same name) meanwhile
    void session.inspectStep(step, ALL_EPISODES).then((a) => {
      if (live) setAnswer({ key, a });
    });
    return () => {
      live = false;
    };
    // One call per opening and per step in view (`key` is the step's identity; `step` itself is a
    // fresh object on every render of the panel).
  }, [open, key, idle, session]);
  const current = answer && answer.key === key ? answer.a : null;
  return (
    <div className="token-inspector" data-testid="inspector">
      <button type="button" className="small" data-testid="inspect-tokens" aria-expanded={open} disabled={!step} onClick={() => setOpen(!open)} title="How the update in view moved each of the agent's tokens (docs/method.md §9b.1)">
        {open ? 'Hide token inspector' : step ? `Inspect agent ${step.agent}'s tokens (stage ${step.stage})` : 'Inspect tokens'}
      </button>
      {open && (
        <div className="ti-body" data-testid="inspector-body" data-step={current ? key : undefined}>
          {!idle ? (
            <p className="muted">The inspector reads the agent when the step in progress is done…</p>
          ) : !current ? (
            <p className="muted">Asking agent {step?.agent}&apos;s worker…</p>
          ) : current.ok ? (
            <InspectionView key={key} ins={current.inspection} {...(rewards ? { rewards } : {})} target={target ?? null} />
          ) : (
            <p className="ti-unavailable" data-testid="inspector-unavailable">
              {current.reason}
            </p>
          )}
          <p className="chart-howto">
            <span className="chart-howto-label">How to read this:</span> each of the agent&apos;s tokens in the batch its update trained on
            (π_cur = the policy that wrote them, π_new = after the accepted update), coloured by w·Ã·log r: green where the update raised a
            token of a better-than-average episode or lowered one of a worse, red the other way (or, chosen above, by
            w·Ã·r — advantage × ratio, the token's term of the unclipped surrogate: green for a better-than-average
            episode, stronger the more the update raised the token). A dashed outline: the term it belongs to is
            clipped at π_new (under objective = sequence the whole episode&apos;s term, r_e = Π r). The bar under a token is its KL(π_new ‖ π_cur)
            against δ, red beyond it (docs/method.md §5, §5.4, §9b.1). Healthy: mostly green, few red bars.
          </p>
        </div>
      )}
    </div>
  );
}
