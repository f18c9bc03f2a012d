#!/usr/bin/env node
/**
 * `npm run build:wasm`: compiles the CPU backend's WebAssembly SIMD kernels (wasm/kernels.ts,
 * AssemblyScript) with the asc compiler from node_modules (the `assemblyscript` devDependency) and
 * writes the module bytes, base64, into src/backend/cpu/wasm/kernels.wasm.ts — a committed file,
 * so the app (Vite bundles it into the workers) and Node (tests, CLI, bench) load the kernels with
 * no build step, no fetch and no file path. Nothing is downloaded, at build time or at run time.
 *
 * Two builds of the same source, both in the artifact:
 *   KERNELS_WASM_BASE64        -O3 (speed), --runtime stub (no GC: the kernels never allocate),
 *                              --enable simd (v128), --noAssert, exported memory (the loader,
 *                              src/backend/cpu/simd.ts, grows it and owns its layout);
 *   KERNELS_WASM_SHARED_BASE64 the same plus threads: --enable simd,threads --importMemory
 *                              --sharedMemory --maximumMemory 65536 (4 GiB, wasm32's whole space,
 *                              which the unshared build may also grow to): its memory is a shared
 *                              WebAssembly.Memory the loader creates, and the CPU backend's helper
 *                              threads (src/backend/cpu/threads.ts) instantiate the same module on it.
 *   KERNELS_WASM_RELAXED_BASE64 the shared build with relaxed SIMD as well (--enable
 *                              simd,threads,relaxed-simd): the int8-activation products take the
 *                              8-bit dot product (i32x4.relaxed_dot_i8x16_i7x16_add_s) where the
 *                              engine has it (browsers since 2023; Node 20 behind
 *                              --experimental-wasm-relaxed-simd). Its operands are kept in the
 *                              range where every engine gives the exact integer sum, so its outputs
 *                              are the shared build's, bit for bit (wasm/kernels.ts relaxedActs).
 * An engine will not link a shared-memory module to an unshared memory, hence two memory builds; the
 * kernels are the same code (no atomics in them: the threads synchronise in JS), the relaxed one
 * choosing its dot products at compile time (ASC_FEATURE_RELAXED_SIMD).
 *
 * Usable as a module: `buildKernels(build)` returns the bytes and `renderArtifact(...)` the file text;
 * tests/simd.test.ts rebuilds all three and compares them with the committed artifact, so the artifact cannot
 * drift from its source. `node scripts/build-wasm.mjs --check` does the same comparison and exits
 * 1 on a difference.
 *
 * Not here: the loader or any kernel maths.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import asc from 'assemblyscript/asc';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const SOURCE = 'wasm/kernels.ts';
export const ARTIFACT = 'src/backend/cpu/wasm/kernels.wasm.ts';
export const ASC_FLAGS = ['-O3', '--runtime', 'stub', '--enable', 'simd', '--noAssert', '--initialMemory', '1'];
/** The shared-memory build's flags (header); the loader creates its memory with the same maximum. */
export const ASC_SHARED_FLAGS = ['-O3', '--runtime', 'stub', '--enable', 'simd,threads', '--noAssert', '--initialMemory', '1', '--importMemory', '--sharedMemory', '--maximumMemory', '65536'];

/** The relaxed-SIMD build's flags: the shared build's, relaxed SIMD enabled too. */
export const ASC_RELAXED_FLAGS = ASC_SHARED_FLAGS.map((f) => (f === 'simd,threads' ? 'simd,threads,relaxed-simd' : f));
const FLAGS = { plain: ASC_FLAGS, shared: ASC_SHARED_FLAGS, relaxed: ASC_RELAXED_FLAGS };

/** Compiles wasm/kernels.ts in memory — `build` 'plain', 'shared' or 'relaxed' (header); resolves to the module bytes. */
export async function buildKernels(build = 'plain') {
  if (!(build in FLAGS)) throw new Error(`buildKernels: no build ${build} (plain, shared, relaxed)`);
  let binary = null;
  const errors = [];
  const { error } = await asc.main([SOURCE, '--outFile', 'kernels.wasm', ...FLAGS[build]], {
    readFile: (name, baseDir) => {
      try {
        return readFileSync(join(baseDir, name), 'utf8');
      } catch {
        return null;
      }
    },
    writeFile: (name, contents) => {
      if (name.endsWith('.wasm')) binary = contents;
    },
    listFiles: () => [],
    stdout: { write: () => true },
    stderr: { write: (s) => (errors.push(String(s)), true) },
    baseDir: ROOT,
  });
  if (error) throw new Error(`asc failed: ${error.message}\n${errors.join('')}`);
  if (!(binary instanceof Uint8Array)) throw new Error('asc wrote no .wasm');
  return binary;
}

/** `bytes` as a base64 string literal, 100 characters a line. */
const literal = (bytes) => (Buffer.from(bytes).toString('base64').match(/.{1,100}/g) ?? []).map((l) => `  '${l}'`).join(' +\n') + ';';

/** The text of src/backend/cpu/wasm/kernels.wasm.ts for the three builds' bytes. */
export function renderArtifact(bytes, sharedBytes, relaxedBytes) {
  return [
    '/**',
    ' * GENERATED by `npm run build:wasm` (scripts/build-wasm.mjs) from wasm/kernels.ts — do not edit.',
    ` * The WebAssembly SIMD kernels of the CPU backend: ${bytes.length} bytes, base64, asc ${ASC_FLAGS.join(' ')};`,
    ` * the shared-memory build for threads: ${sharedBytes.length} bytes, asc ${ASC_SHARED_FLAGS.join(' ')};`,
    ` * and that build with relaxed SIMD: ${relaxedBytes.length} bytes, asc ${ASC_RELAXED_FLAGS.join(' ')}.`,
    ' * tests/simd.test.ts rebuilds them and checks these bytes. Loaded by ../simdMemory.ts.',
    ' * Not here: anything but the bytes.',
    ' */',
    'export const KERNELS_WASM_BASE64 =',
    literal(bytes),
    'export const KERNELS_WASM_SHARED_BASE64 =',
    literal(sharedBytes),
    'export const KERNELS_WASM_RELAXED_BASE64 =',
    literal(relaxedBytes),
    '',
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const text = renderArtifact(await buildKernels('plain'), await buildKernels('shared'), await buildKernels('relaxed'));
  const path = join(ROOT, ARTIFACT);
  if (process.argv.includes('--check')) {
    const same = readFileSync(path, 'utf8') === text;
    console.log(same ? `${ARTIFACT} matches ${SOURCE}` : `${ARTIFACT} differs from a fresh build of ${SOURCE}: run npm run build:wasm`);
    process.exit(same ? 0 : 1);
  }
  writeFileSync(path, text);
  console.log(`wrote ${ARTIFACT}`);
}
