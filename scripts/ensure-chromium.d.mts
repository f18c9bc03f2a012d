/**
 * Types for scripts/ensure-chromium.mjs (kept as plain JS so it runs before `npm ci`).
 * Not here: any behaviour.
 */
export declare const CHROMIUM_PATH: '/usr/bin/chromium';
export declare const MISSING_MESSAGE: string;
export declare function ensureChromium(): Promise<string>;
