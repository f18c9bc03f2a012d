/**
 * The command lines' flags (src/cli/sat.ts, src/cli/pretrain.ts, bench/cpu.ts, bench/gpu.ts), read
 * by Node's own `parseArgs`. Each command states its flags once and reads them back in the order
 * given (`--stages 3 --set stages=5` means 5), one at a time, so `--help` answers before a later
 * mistake is looked at. `parseArgs` runs non-strict and this file checks, so each message names
 * what is wrong as typed: an unknown flag, a missing value (`--preset --stages`), a stray word.
 *
 * Not here: what the values mean or which are allowed (each command checks its own), the usage texts.
 */
import { parseArgs } from 'node:util';
import { SatError } from '../core/errors';
import { escapeLines } from '../core/text';

/** A mistake in the command line itself (its usage text is printed after the message). */
export class UsageError extends Error {}

/**
 * Runs a command's `main` with the common ending: a closed pipe (`… | head`) ends quietly; a
 * mistake the command can name (SatError, UsageError — then the usage — or RangeError) prints
 * `error: …` and exits with status 2; anything else is a bug and is thrown.
 */
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
