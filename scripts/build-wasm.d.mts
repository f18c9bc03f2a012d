/**
 * Types for scripts/build-wasm.mjs (plain JS so `npm run build:wasm` needs no TypeScript loader).
 * Not here: any behaviour.
 */
export declare const SOURCE: string;
export declare const ARTIFACT: string;
export declare const ASC_FLAGS: readonly string[];
export declare const ASC_SHARED_FLAGS: readonly string[];
export declare const ASC_RELAXED_FLAGS: readonly string[];
export declare function buildKernels(build?: 'plain' | 'shared' | 'relaxed'): Promise<Uint8Array>;
export declare function renderArtifact(bytes: Uint8Array, sharedBytes: Uint8Array, relaxedBytes: Uint8Array): string;
