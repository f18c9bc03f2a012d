/**
 * Runtime schemas (valibot) and the one wording of their failures. Every reader of a record, a
 * file or a link checks its input against a schema written once, and the first problem reads
 * "<path> is <value>, expected <what>": a schema's message is a template whose {path} and {value}
 * `problemOf` fills in with the failing value's path and a short description of it.
 *
 * Not here: the schemas of records (src/sat/records.ts) and of files and links (src/app/payloads.ts).
 */
import * as v from 'valibot';

type Schema = v.GenericSchema;

/** A value as a message shows it: short, whatever it is (never the whole of a long text or list). */
export function describeValue(x: unknown): string {
  if (x === undefined) return 'missing';
  if (x === null) return 'null';
  if (typeof x === 'number') return Object.is(x, -0) ? '-0' : String(x);
  if (typeof x === 'boolean') return String(x);
  if (typeof x === 'string') return `the text ${JSON.stringify(x.length > 40 ? `${x.slice(0, 40)}…` : x)}${x.length > 40 ? ` (${x.length} characters)` : ''}`;
  if (x instanceof Float64Array || x instanceof Float32Array || x instanceof Int32Array) {
    return `a blob of ${x.length} ${x instanceof Float64Array ? 'f64' : x instanceof Float32Array ? 'f32' : 'i32'} values`;
  }
  if (Array.isArray(x)) return `a list of ${x.length}`;
  return 'an object';
}

/** "step 0.cert.range[0]": `root`, then the issue's path (keys after a dot, list indices in brackets). */
function pathOf(root: string, issue: v.BaseIssue<unknown>): string {
  let out = root;
  for (const p of issue.path ?? []) {
    const k = p.key as string | number;
    out += typeof k === 'number' ? `[${k}]` : out === '' ? k : `.${k}`;
  }
  return out;
}

/** The first problem `issues` name, as a sentence without its final period. */
export function problemOf(issues: readonly v.BaseIssue<unknown>[], root = ''): string {
  const issue = issues[0]!;
  return issue.message.replaceAll('{path}', pathOf(root, issue)).replaceAll('{value}', describeValue(issue.input));
}

/** The first problem of `x` against `schema` (paths start at `root`), or undefined when it conforms. */
export function firstProblem(schema: Schema, x: unknown, root = ''): string | undefined {
  const r = v.safeParse(schema, x, { abortEarly: true });
  return r.success ? undefined : problemOf(r.issues, root);
}

/** The message of a value that is not `what`. */
export const expecting = (what: string): string => `{path} is {value}, expected ${what}`;

export function isCount(x: unknown): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
}

/** Any number: NaN and ±Infinity included (a record holds them, e.g. an unbounded clip). */
export const anyNumber = v.custom<number>((x) => typeof x === 'number', expecting('a number'));
/** A whole number ≥ 0. */
export const count = v.custom<number>(isCount, expecting('a whole number ≥ 0'));
export const bool = v.boolean(expecting('true or false'));
export const text = v.string(expecting('a text'));

/** One of some texts. */
export function oneOf<const T extends readonly string[]>(options: T) {
  return v.picklist(options, expecting(options.map((x) => JSON.stringify(x)).join(' or ')));
}

/** A list of `item` (of exactly `length` when given), read-only. */
export function listOf<S extends Schema>(item: S, length?: number) {
  const what = expecting(length === undefined ? 'a list' : `a list of ${length}`);
  return v.pipe(v.array(item, what), v.check((a) => length === undefined || a.length === length, what), v.readonly());
}

/** The agent index 0..n−1. */
export function agentIndex(n: number) {
  return v.pipe(v.custom<number>((x) => typeof x === 'number', expecting(`an agent 0..${n - 1}`)), v.check((x) => isCount(x) && x < n, `{path} names agent {value}, not one of 0..${n - 1}`));
}

/**
 * An object with these fields (others are let through, as written); a missing field reads
 * "<path> is missing, expected <what that field expects>".
 */
export function fields<E extends v.ObjectEntries>(entries: E) {
  return v.object(entries, (issue) => {
    const key = issue.path?.at(-1)?.key;
    const entry = typeof key === 'string' ? (entries[key] as { message?: unknown } | undefined) : undefined;
    return typeof entry?.message === 'string' ? entry.message : expecting('an object');
  });
}

/** `keys` as { key: anyNumber }. */
export function numbers<const K extends string>(...keys: K[]): Record<K, typeof anyNumber> {
  return Object.fromEntries(keys.map((k) => [k, anyNumber])) as Record<K, typeof anyNumber>;
}

/** Compile-time: true when A and B have the same keys (a field added to one fails the check). */
export type SameKeys<A, B> = [keyof A] extends [keyof B] ? ([keyof B] extends [keyof A] ? true : false) : false;
