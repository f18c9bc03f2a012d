/**
 * A checkpoint's chat template, rendered by @huggingface/jinja within budgets, so a template from
 * an untrusted tokenizer_config.json cannot hang or exhaust the page or the CLI: every evaluation
 * step is counted (TEMPLATE_MAX_STEPS), every string and list the template builds is measured as
 * it is built (TEMPLATE_MAX_CHARS characters, TEMPLATE_MAX_RANGE items), and `range()` refuses a
 * list longer than TEMPLATE_MAX_RANGE before building it (src/core/limits.ts). A template past a
 * budget fails with a TemplateBudgetError naming it; the caller names the file.
 *
 * The library's own Template.render builds its globals and interpreter internally, so this renders
 * the parsed program with an Interpreter whose `evaluate` keeps the count, in an Environment with
 * the same globals (true/false/none, raise_exception, strftime_now) and a bounded `range`.
 *
 * Not here: which template or what it is given (hfTokenizer.ts).
 */
import { Environment, Interpreter, Template } from '@huggingface/jinja';
import { TEMPLATE_MAX_CHARS, TEMPLATE_MAX_RANGE, TEMPLATE_MAX_STEPS } from '../core/limits';

/** A template past one of its budgets. */
export class TemplateBudgetError extends Error {}

type Statement = Parameters<Interpreter['evaluate']>[0];
type Value = ReturnType<Interpreter['evaluate']>;

/** An interpreter that counts its steps and measures what each step built. */
class BudgetedInterpreter extends Interpreter {
  private steps = 0;

  constructor(env: Environment) {
    super(env);
    // A loop runs its body through evaluateBlock, which calls evaluate only for the statements in
    // it: an empty body would iterate uncounted. The method is private in the library's types,
    // so it is wrapped on the instance rather than overridden.
    const self = this as unknown as { evaluateBlock: (...args: unknown[]) => unknown };
    const block = self.evaluateBlock.bind(this);
    self.evaluateBlock = (...args) => {
      this.step();
      return block(...args);
    };
  }

  private step(): void {
    if (++this.steps > TEMPLATE_MAX_STEPS) throw new TemplateBudgetError(`it takes more than ${TEMPLATE_MAX_STEPS.toLocaleString('en-US')} evaluation steps`);
  }

  override evaluate(statement: Statement, environment: Environment): Value {
    this.step();
    const v = super.evaluate(statement, environment);
    const x = (v as { value?: unknown }).value;
    // A list costs a step per item: a loop over it does that much work before its body runs.
    if (Array.isArray(x)) for (let k = 0; k < x.length; k += 64) this.step();
    if (typeof x === 'string' && x.length > TEMPLATE_MAX_CHARS) throw new TemplateBudgetError(`it builds a string of more than ${TEMPLATE_MAX_CHARS.toLocaleString('en-US')} characters`);
    if (Array.isArray(x) && x.length > TEMPLATE_MAX_RANGE) throw new TemplateBudgetError(`it builds a list of more than ${TEMPLATE_MAX_RANGE.toLocaleString('en-US')} items`);
    return v;
  }
}

/** Python's range, refusing a list longer than TEMPLATE_MAX_RANGE before it is built. */
function boundedRange(start: number, stop?: number, step = 1): number[] {
  if (stop === undefined) [start, stop] = [0, start];
  if (step === 0) throw new Error('range() step must not be zero');
  const n = Math.max(0, Math.ceil((stop - start) / step));
  if (!(n <= TEMPLATE_MAX_RANGE)) throw new TemplateBudgetError(`range() asks for ${Number.isFinite(n) ? n.toLocaleString('en-US') : String(n)} items, more than ${TEMPLATE_MAX_RANGE.toLocaleString('en-US')}`);
  return Array.from({ length: n }, (_, k) => start + k * step);
}

const pad2 = (n: number): string => String(n).padStart(2, '0');

/** strftime_now as the library defines it (%Y %m %d %b %B %H %M %%). */
function strftimeNow(format: string): string {
  const d = new Date();
  return format.replace(/%[YmdbBHM%]/g, (t) => {
    switch (t) {
      case '%Y': return String(d.getFullYear());
      case '%m': return pad2(d.getMonth() + 1);
      case '%d': return pad2(d.getDate());
      case '%b': return new Intl.DateTimeFormat(undefined, { month: 'short' }).format(d);
      case '%B': return new Intl.DateTimeFormat(undefined, { month: 'long' }).format(d);
      case '%H': return pad2(d.getHours());
      case '%M': return pad2(d.getMinutes());
      default: return '%';
    }
  });
}

/** A parsed chat template; `render` runs it within the budgets (header). */
export class ChatTemplate {
  private readonly program: Template['parsed'];

  /** Parses `source`; throws the library's error when it does not parse. */
  constructor(source: string) {
    this.program = new Template(source).parsed;
  }

  /** The template's text for `items`; throws TemplateBudgetError past a budget, the library's error otherwise. */
  render(items: Record<string, unknown>): string {
    const env = new Environment();
    const globals: Record<string, unknown> = {
      false: false, true: true, none: null, False: false, True: true, None: null,
      raise_exception: (msg: unknown) => { throw new Error(String(msg)); },
      range: boundedRange,
      strftime_now: strftimeNow,
      ...items,
    };
    for (const [k, v] of Object.entries(globals)) env.set(k, v);
    try {
      const out = new BudgetedInterpreter(env).run(this.program).value;
      return typeof out === 'string' ? out : String(out);
    } catch (e) {
      // V8's own limits (a string past its maximum length, a list past its maximum size) are budgets too.
      if (e instanceof RangeError) throw new TemplateBudgetError(`it builds a value larger than this engine allows (${e.message})`);
      throw e;
    }
  }
}
