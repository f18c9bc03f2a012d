/**
 * Random YAML documents of a known nesting depth, for the recipe's depth check
 * (src/bridge/recipe.ts checkRecipeYaml): a spine of nested collections `depth` levels deep, each
 * level a block map, a block sequence (compact `- - x` or on its own lines) or a flow `[`/`{`,
 * at random indentation steps (1–4 spaces, odd ones included), with shallower siblings and noise
 * that indentation alone would count but that opens nothing: block scalars whose lines step
 * further right, plain scalars continued on deeper lines, comments at any indentation.
 *
 * Not here: the check itself, or what a recipe must hold.
 */
import type { Rng } from '../../src/core/rng';

/** A collection: its items (scalars are strings), and how it is written. */
interface Node {
  readonly kind: 'map' | 'seq';
  readonly flow: boolean;
  readonly items: (Node | string)[];
}

/** One output line; `raw` lines (a block scalar's) take no comment before them. */
interface Line {
  readonly text: string;
  readonly raw?: boolean;
}

const sp = (n: number): string => ' '.repeat(n);

/** A tree whose deepest collection is `depth` levels down (depth ≥ 1); collections with at most `flowLeft` levels below and in them are flow. */
function tree(rng: Rng, depth: number, flowLeft: number): Node {
  const flow = depth <= flowLeft;
  const kind = rng.int(2) === 0 ? 'map' : 'seq';
  const items: (Node | string)[] = [];
  const spine = rng.int(3);
  for (let i = 0; i < 3; i++) {
    if (i === spine && depth > 1) items.push(tree(rng, depth - 1, flowLeft));
    else if (depth > 2 && rng.int(4) === 0) items.push(tree(rng, 1 + rng.int(Math.min(3, depth - 2)), flowLeft)); // shallow, so the text stays small
    else items.push(`v${rng.int(100)}`);
  }
  return { kind, flow, items };
}

/** A flow collection on one line. */
function flowText(n: Node): string {
  const parts = n.items.map((x, i) => {
    const v = typeof x === 'string' ? x : flowText(x);
    return n.kind === 'map' ? `k${i}: ${v}` : v;
  });
  return n.kind === 'map' ? `{${parts.join(', ')}}` : `[${parts.join(', ')}]`;
}

/** A scalar value after "k: " or "- " at column `col`: plain, a block scalar stepping right, or a plain scalar continued on deeper lines. */
function scalar(rng: Rng, v: string, col: number): { head: string; more: Line[] } {
  const r = rng.int(6);
  if (r === 0) return { head: '|', more: Array.from({ length: 3 + rng.int(12) }, (_, j) => ({ text: `${sp(col + 1 + j)}${v} line ${j}`, raw: true })) };
  if (r === 1) return { head: v, more: Array.from({ length: 2 + rng.int(10) }, (_, j) => ({ text: `${sp(col + 1 + 2 * j)}more${j}`, raw: true })) };
  return { head: v, more: [] };
}

/** The block lines of `n` at column `col`. */
function blockLines(rng: Rng, n: Node, col: number): Line[] {
  const out: Line[] = [];
  n.items.forEach((x, i) => {
    const lead = n.kind === 'map' ? `${sp(col)}k${i}:` : `${sp(col)}-`;
    if (typeof x === 'string') {
      const s = scalar(rng, x, col);
      out.push({ text: `${lead} ${s.head}` }, ...s.more);
    } else if (x.flow) {
      out.push({ text: `${lead} ${flowText(x)}` });
    } else if (n.kind === 'seq' && rng.int(2) === 0) {
      // compact: the child's first line starts on the dash's line
      const child = blockLines(rng, x, col + 2);
      out.push({ text: `${lead} ${child[0]!.text.slice(col + 2)}` }, ...child.slice(1));
    } else {
      const step = x.kind === 'seq' && n.kind === 'map' ? rng.int(5) : 1 + rng.int(4);
      out.push({ text: lead }, ...blockLines(rng, x, col + step));
    }
  });
  return out;
}

/** How many collections deep a parsed value is (an explicit stack: no recursion). */
export function valueDepth(v: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[v, 0]];
  while (stack.length > 0) {
    const [x, d] = stack.pop()!;
    if (x === null || typeof x !== 'object') continue;
    deepest = Math.max(deepest, d + 1);
    for (const y of Object.values(x)) stack.push([y, d + 1]);
  }
  return deepest;
}

/**
 * A YAML document nested exactly `depth` collections deep (header), its top a block map or
 * sequence; comments at random indentation between its lines.
 */
export function yamlOfDepth(rng: Rng, depth: number): string {
  const flowLeft = rng.int(Math.min(depth, 12));
  let top = tree(rng, depth, flowLeft);
  if (top.flow) top = { ...top, flow: false };
  const lines = blockLines(rng, top, 0);
  const out: string[] = [];
  for (const [i, l] of lines.entries()) {
    if (!l.raw && i > 0 && rng.int(5) === 0) out.push(`${sp(rng.int(60))}# note ${i}`);
    out.push(l.text);
  }
  return `${out.join('\n')}\n`;
}
