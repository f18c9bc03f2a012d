/**
 * A static check that a tokenizer's regular expression cannot backtrack badly, so a pattern from an
 * untrusted tokenizer.json cannot hang the page or the CLI: JavaScript's engine backtracks and a
 * running match cannot be interrupted, so the pattern is judged before it is compiled.
 *
 * The pattern is parsed (the Oniguruma / JavaScript syntax tokenizer.json uses) into alternations,
 * sequences and quantified atoms, and refused for: a nested quantifier (`(a+)+`); a repeated
 * alternation whose branches can start alike (`(\d|\w)+`); a backreference; more than
 * MAX_UNBOUNDED_CHAIN unbounded repetitions in one sequence (`\w*\d*\w*$`); two that may share
 * characters before a part that can fail (`\w*\w*!`). What passes costs at most ~n² per scan, as
 * the GPT-2, Llama-3, Qwen2 and GPT-4o patterns do. The check is conservative (`(ab+)+` is safe but
 * refused); docs/models.md has the rules' costs.
 *
 * Not here: running the pattern (@huggingface/tokenizers compiles it), the tokenizer's other checks
 * (hfTokenizer.ts).
 */

type Atom =
  | { readonly kind: 'char'; readonly ch: string }
  /** Anything that matches one of many characters: a class, `.`, `\w`, `\p{L}`; or an assertion. */
  | { readonly kind: 'wide'; /** `\s`, `\w` or `\d` when it is one of them (whitespace is disjoint from the other two). */ readonly cls?: 's' | 'w' | 'd' }
  | { readonly kind: 'group'; readonly alt: Alt; readonly look: boolean };
interface Term {
  readonly atom: Atom;
  readonly min: number;
  readonly max: number;
  /** Where it is in the pattern: [start, end) of the atom and its quantifier. */
  readonly span: readonly [number, number];
}
type Seq = Term[];
type Alt = Seq[];

class Bad extends Error {}

/** Parses `src` into an alternation; throws Bad for a backreference or syntax it cannot follow. */
function parse(src: string): Alt {
  let i = 0;
  const alt = (): Alt => {
    const branches: Alt = [[]];
    while (i < src.length && src[i] !== ')') {
      if (src[i] === '|') {
        i++;
        branches.push([]);
        continue;
      }
      const start = i;
      const atom = parseAtom();
      const [min, max] = quantifier();
      branches[branches.length - 1]!.push({ atom, min, max, span: [start, i] });
    }
    return branches;
  };
  const parseAtom = (): Atom => {
    const c = src[i]!;
    if (c === '(') {
      i++;
      let look = false;
      if (src[i] === '?') {
        const m = /^\?(?:<?[=!]|:|<[A-Za-z_]\w*>|[a-zA-Z-]*:)/.exec(src.slice(i));
        if (!m) throw new Bad(`the group at character ${i - 1} is of a kind this check does not know`);
        look = /^\?<?[=!]$/.test(m[0]);
        i += m[0].length;
      }
      const inner = alt();
      if (src[i] !== ')') throw new Bad('a group is not closed');
      i++;
      return { kind: 'group', alt: inner, look };
    }
    if (c === '[') {
      i++;
      if (src[i] === '^') i++;
      if (src[i] === ']') i++;
      let depth = 1; // Oniguruma allows nested classes
      while (i < src.length && depth > 0) {
        if (src[i] === '\\') i++;
        else if (src[i] === '[') depth++;
        else if (src[i] === ']') depth--;
        i++;
      }
      if (depth > 0) throw new Bad('a character class is not closed');
      return { kind: 'wide' };
    }
    if (c === '\\') {
      const e = src[i + 1];
      if (e === undefined) throw new Bad('the pattern ends in a backslash');
      if (/[1-9k]/.test(e)) throw new Bad(`it refers back to a group (\\${e}), which can make matching take exponential time`);
      i += 2;
      if (/[pPux]/.test(e) && src[i] === '{') i = src.indexOf('}', i) + 1 || src.length;
      else if (e === 'u') i += 4;
      else if (e === 'x') i += 2;
      else if (e === 'c') i += 1;
      return /[A-Za-z0-9]/.test(e) ? (e === 's' || e === 'w' || e === 'd' ? { kind: 'wide', cls: e } : { kind: 'wide' }) : { kind: 'char', ch: e };
    }
    i++;
    if (c === '.' || c === '^' || c === '$') return { kind: 'wide' };
    return { kind: 'char', ch: c };
  };
  const quantifier = (): [number, number] => {
    const c = src[i];
    let q: [number, number] = [1, 1];
    if (c === '*') q = [0, Infinity];
    else if (c === '+') q = [1, Infinity];
    else if (c === '?') q = [0, 1];
    else if (c === '{') {
      // Sticky at i (no copy of the rest), and the two digit runs apart on either side of a required comma: linear in the pattern.
      const brace = /\{(\d*)(?:(,)(\d*))?\}/y;
      brace.lastIndex = i;
      const m = brace.exec(src);
      if (!m || (m[1] === '' && (m[3] ?? '') === '')) return q; // a literal "{"
      const lo = m[1] === '' ? 0 : Number(m[1]);
      i += m[0].length;
      return lazy([lo, m[2] === undefined ? lo : m[3] === '' ? Infinity : Number(m[3])]);
    } else return q;
    i++;
    return lazy(q);
  };
  const lazy = (q: [number, number]): [number, number] => {
    if (src[i] === '?' || src[i] === '+') i++; // lazy or possessive: the same paths to try
    return q;
  };
  const out = alt();
  if (i < src.length) throw new Bad(`an unmatched ")" at character ${i}`);
  return out;
}

/** Does any part of `a` repeat without a bound (or more than once)? */
function repeats(a: Alt): boolean {
  return a.some((seq) => seq.some((t) => t.max > 1 || (t.atom.kind === 'group' && repeats(t.atom.alt))));
}

/** The characters a sequence can start with: literal characters, or 'wide' (could be anything). */
function firsts(seq: Seq, from = 0): Set<string> | 'wide' {
  const out = new Set<string>();
  for (let k = from; k < seq.length; k++) {
    const t = seq[k]!;
    let f: Set<string> | 'wide';
    if (t.atom.kind === 'char') f = new Set([t.atom.ch]);
    else if (t.atom.kind === 'wide' || t.atom.look) return 'wide';
    else {
      f = new Set();
      for (const b of t.atom.alt) {
        const g = firsts(b);
        if (g === 'wide') return 'wide';
        for (const x of g) f.add(x);
      }
    }
    for (const x of f) out.add(x);
    if (t.min > 0) return out;
  }
  return out.size === 0 ? 'wide' : out; // an empty branch: overlaps everything
}

/** Unbounded repetitions a sequence of this pattern may chain (header): more than this is refused. */
export const MAX_UNBOUNDED_CHAIN = 2;

/** The most unbounded repetitions one match of `a` can chain in one sequence (a group that is not repeated adds its branch's own; a lookaround counts apart). */
function chain(a: Alt): number {
  let most = 0;
  for (const seq of a) {
    let n = 0;
    for (const t of seq) {
      if (t.atom.kind === 'group' && t.atom.look) {
        most = Math.max(most, chain(t.atom.alt));
        continue;
      }
      if (t.max === Infinity) n += 1;
      else if (t.atom.kind === 'group') n += chain(t.atom.alt);
    }
    most = Math.max(most, n);
  }
  return most;
}

/** The first sequence of `a` (at any depth) that chains more than MAX_UNBOUNDED_CHAIN unbounded repetitions, as the text from its first such term to its last. */
function longChain(a: Alt, text: (from: Term, to: Term) => string): string | null {
  for (const seq of a) {
    const counted = seq.filter((t) => !(t.atom.kind === 'group' && t.atom.look) && (t.max === Infinity || (t.atom.kind === 'group' && chain(t.atom.alt) > 0)));
    if (chain([seq]) > MAX_UNBOUNDED_CHAIN && counted.length > 1) return text(counted[0]!, counted[counted.length - 1]!);
    for (const t of seq) {
      if (t.atom.kind !== 'group') continue;
      const inner = longChain(t.atom.alt, text);
      if (inner) return inner;
    }
  }
  return null;
}

/**
 * The first sequence of `a` (at any depth) where two unbounded repetitions are followed by a part
 * that can fail (one that must match at least once, or a lookaround), as the text from the first
 * repetition to that part; null when there is none (header).
 */
function pairBeforeFailure(a: Alt, text: (from: Term, to: Term) => string): string | null {
  for (const seq of a) {
    const reps: Term[] = [];
    for (const t of seq) {
      const look = t.atom.kind === 'group' && t.atom.look;
      if (reps.length >= 2 && (look || t.min >= 1) && reps.some((x, i) => reps.slice(i + 1).some((y) => mayShare(x.atom, y.atom)))) return text(reps[0]!, t);
      if (look) continue;
      if (t.max === Infinity) reps.push(t);
      else if (t.atom.kind === 'group') for (let k = chain(t.atom.alt); k > 0; k--) reps.push(t); // inside a group: may share anything
    }
    for (const t of seq) {
      if (t.atom.kind !== 'group') continue;
      const inner = pairBeforeFailure(t.atom.alt, text);
      if (inner) return inner;
    }
  }
  return null;
}

/** Can two repeated atoms match a common character? Only two literals, or whitespace against `\w` / `\d`, are known not to. */
function mayShare(x: Atom, y: Atom): boolean {
  if (x.kind === 'char' && y.kind === 'char') return x.ch === y.ch;
  if (x.kind === 'wide' && y.kind === 'wide' && x.cls && y.cls) return x.cls === y.cls || (x.cls !== 's' && y.cls !== 's');
  return true;
}

/** The reason `a` can backtrack exponentially, or null (see the header for the two shapes). */
function danger(a: Alt, text: (t: Term) => string): string | null {
  for (const seq of a) {
    for (const t of seq) {
      if (t.atom.kind !== 'group') continue;
      const inner = t.atom.alt;
      if (t.max > 1 && repeats(inner)) return `the repeated group ${text(t)} holds a repeated part of its own (a nested quantifier)`;
      if (t.max > 1 && inner.length > 1) {
        const sets = inner.map((b) => firsts(b));
        for (let x = 0; x < sets.length; x++) {
          for (let y = x + 1; y < sets.length; y++) {
            const [p, q] = [sets[x]!, sets[y]!];
            if (p === 'wide' || q === 'wide' || [...p].some((c) => q.has(c))) return `the repeated group ${text(t)} has alternatives that can match the same text`;
          }
        }
      }
      const deeper = danger(inner, text);
      if (deeper) return deeper;
    }
  }
  return null;
}

/** What a pattern could cost to match, and why (a sentence). */
export interface MatchRisk {
  readonly time: 'exponential' | 'polynomial';
  readonly why: string;
}

/**
 * What `pattern` could cost to match when that is exponential, or polynomial past ~n² on n
 * characters; null when it cannot (header). A pattern this check cannot parse is refused as
 * exponential, with the reason.
 */
export function backtrackingRisk(pattern: string): MatchRisk | null {
  let tree: Alt;
  try {
    tree = parse(pattern);
  } catch (e) {
    if (e instanceof Bad) return { time: 'exponential', why: e.message };
    throw e;
  }
  const quote = (from: number, to: number): string => {
    const part = pattern.slice(from, to);
    return `"${part.length > 40 ? `${part.slice(0, 40)}…` : part}"`;
  };
  const exp = danger(tree, (t) => quote(t.span[0], t.span[1]));
  if (exp) return { time: 'exponential', why: exp };
  const k = chain(tree);
  if (k <= MAX_UNBOUNDED_CHAIN) {
    const pair = pairBeforeFailure(tree, (from, to) => quote(from.span[0], to.span[1]));
    return pair ? { time: 'polynomial', why: `the part ${pair} has two unbounded repetitions before a part that can fail, so a failing scan of n characters can take about n^3 steps` } : null;
  }
  const part = longChain(tree, (from, to) => quote(from.span[0], to.span[1])) ?? quote(0, pattern.length);
  return { time: 'polynomial', why: `the part ${part} chains ${k} unbounded repetitions, so a failing scan of n characters can take about n^${k} steps (at most ${MAX_UNBOUNDED_CHAIN} are accepted)` };
}
