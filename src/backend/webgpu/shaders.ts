/**
 * The WGSL sources, by name: `shaderSource('softmax')` is the text of `shaders/softmax.wgsl`.
 * The .wgsl files are the one source of truth; this module only finds them:
 *   - under Vite (dev server, production build, Vitest) through `import.meta.glob(…, '?raw')`,
 *     which inlines every shaders/*.wgsl as a string at build time;
 *   - under plain Node (tsx: CLI, bench) `import.meta.glob` does not exist, so the file is read
 *     from disk next to this module (`process.getBuiltinModule('node:fs')`, synchronous) — or,
 *     for a one-file bundle (scripts/gpu-pack.sh's, which has no shaders/ beside it), from
 *     shaders/ under the working directory (the repo root, where scripts/gpu-run.sh runs it).
 *
 * Not here: compiling (kernel.ts), any preprocessing beyond concatenating several named sources.
 */

let bundled: Record<string, string> | null;
try {
  // Vite rewrites this call into an object of strings; elsewhere it throws (not a function).
  bundled = import.meta.glob('../../../shaders/*.wgsl', { query: '?raw', import: 'default', eager: true }) as Record<string, string>;
} catch {
  bundled = null;
}

const cache = new Map<string, string>();

/** The text of shaders/<name>.wgsl. Throws an Error naming the file when it does not exist. */
export function shaderSource(name: string): string {
  const hit = cache.get(name);
  if (hit !== undefined) return hit;
  let src: string | undefined;
  if (bundled !== null) {
    src = bundled[`../../../shaders/${name}.wgsl`];
  } else {
    const proc = globalThis.process;
    if (typeof proc?.getBuiltinModule === 'function') {
      const fs = proc.getBuiltinModule('node:fs');
      for (const url of [new URL(`../../../shaders/${name}.wgsl`, import.meta.url), new URL(`shaders/${name}.wgsl`, proc.getBuiltinModule('node:url').pathToFileURL(`${proc.cwd()}/`))]) {
        if (fs.existsSync(url)) {
          src = fs.readFileSync(url, 'utf8');
          break;
        }
      }
    }
  }
  if (src === undefined) throw new Error(`WebGPU: no shader shaders/${name}.wgsl`);
  cache.set(name, src);
  return src;
}
