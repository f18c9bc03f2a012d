/**
 * Errors are values with a message a person can act on: what went wrong, what was kept, and what
 * to do — and the user's experiment is never lost.
 * Every failure the user can cause or meet has its own class and a stable `code`, so the UI can
 * show a specific banner and tests can assert the exact kind — never a bare `Error`.
 *
 * Not here: how errors are displayed (that is the app's job).
 */

export class SatError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'SatError';
    this.code = code;
  }
}

/** A setting that is unknown, of the wrong type, out of range or inconsistent with another. */
export class ConfigError extends SatError {
  readonly key: string;
  readonly value: unknown;
  constructor(key: string, value: unknown, message: string) {
    super('config', message);
    this.name = 'ConfigError'; // spelled out: a minified build renames classes
    this.key = key;
    this.value = value;
  }
}

/** A NaN or infinity where a finite number is required (a loss, a gradient, a KL). */
export class NumericError extends SatError {
  constructor(message: string) {
    super('numeric', message);
    this.name = 'NumericError';
  }
}

/** A malformed file or link: truncated, wrong header, unknown version, bad values. */
export class FormatError extends SatError {
  constructor(message: string) {
    super('format', message);
    this.name = 'FormatError';
  }
}
