/**
 * The command lines' flags (src/cli/sat.ts, src/cli/pretrain.ts, bench/cpu.ts, bench/gpu.ts),
 * read by Node's own `parseArgs` (node:util): `--flag value`, `--flag=value`, `-h`, and `--` are
 * its rules. Each command states its flags once, as `parseArgs` options, and reads them back in
 * the order given (so `--stages 3 --set stages=5` means 5, as it always did) — one at a time, so
 * `--help` answers before a later mistake is looked at.
 *
 * `parseArgs` runs non-strict here and this file does the checking, so that the messages stay the
 * commands' own and name what is wrong: an unknown flag is named as typed (`Unknown flag
 * --frobnicate`); a flag that takes a value and got none — or got the next flag, `--preset
 * --stages` — says `--preset needs a value`; a switch given a value, or a stray word, is named.
 * A value may start with a single dash (`--seed -1` is a number for the command to judge).
 *
 * `runCommand` is the commands' common ending: a closed pipe (`npm run sat … | head`) ends quietly;
 * a mistake the command can name — a SatError, a UsageError (then the usage follows), a RangeError
 * — prints `error: …` and exits with status 2; anything else is a bug and is thrown.
 *
 * Not here: what the values mean or which are allowed (each command checks its own, with its own
 * message), the usage texts.
 */
import { parseArgs } from 'node:util';
import { SatError } from '../core/errors';
import { escapeLines } from '../core/text';

/** A mistake in the command line itself (its usage text is printed after the message). */
export class UsageError extends Error {}

/** Runs a command's `main` with the common ending (see the header). */
export function runCommand(main: () => Promise<void>, usage: string): void {
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
    throw e;
  });
  main().catch((e: unknown) => {
    if (e instanceof SatError || e instanceof UsageError || e instanceof RangeError) {
      console.error(`error: ${escapeLines(e.message)}`); // a message may quote a file's text
      if (e instanceof UsageError) console.error(usage);
      process.exit(2);
    }
    throw e;
  });
}

/**
 * A command's flags: long name → a switch (`boolean`) or a flag with a value (`string`);
 * `multiple` marks one meant to repeat (every flag may: each occurrence is read, in order).
 */
export type FlagSpec = Readonly<Record<string, { readonly type: 'string' | 'boolean'; readonly short?: string; readonly multiple?: boolean }>>;

/** One flag as given: its long name, how it was typed (`--preset`, `-h`), its value (switches: undefined). */
export interface Flag {
  readonly name: string;
  readonly flag: string;
  readonly value: string | undefined;
}

/**
 * The flags of `argv` in order, each checked against `spec` as it is reached; a problem is thrown
 * as `fail(message)`, the command's own error type.
 */
export function* readFlags(argv: readonly string[], spec: FlagSpec, fail: (message: string) => Error): Generator<Flag> {
  const { tokens } = parseArgs({ args: [...argv], options: spec, strict: false, allowPositionals: true, tokens: true });
  for (const t of tokens) {
    if (t.kind === 'option-terminator') continue;
    if (t.kind === 'positional') throw fail(`Unexpected argument ${t.value}: every option is a flag (--name or --name value)`);
    const o = Object.hasOwn(spec, t.name) ? spec[t.name] : undefined;
    if (o === undefined) throw fail(`Unknown flag ${t.rawName}`);
    if (o.type === 'string') {
      if (t.value === undefined || (!t.inlineValue && t.value.startsWith('--'))) throw fail(`${t.rawName} needs a value`);
    } else if (t.value !== undefined) {
      throw fail(`${t.rawName} takes no value, got ${t.rawName}=${t.value}`);
    }
    yield { name: t.name, flag: t.rawName, value: t.value };
  }
}
