/**
 * Exact deep comparison for round-trip tests (savefile, fuzz): the first path where two values
 * differ, or null. Numbers by Object.is (NaN = NaN, 0 ≠ −0), typed arrays by type and bytes, Maps
 * by their entries, objects ignoring keys whose value is undefined (as JSON does).
 *
 * Not here: tolerances (kernel tests compare with relative error).
 */

/** Exact deep equality: numbers by Object.is (NaN = NaN, 0 ≠ −0), typed arrays by type and bits. */
export function exactDiff(a: unknown, b: unknown, path = '$'): string | null {
  if (typeof a === 'number' || typeof b === 'number') return Object.is(a, b) ? null : `${path}: ${String(a)} ≠ ${String(b)}`;
  if (ArrayBuffer.isView(a) || ArrayBuffer.isView(b)) {
    if (!ArrayBuffer.isView(a) || !ArrayBuffer.isView(b) || a.constructor !== b.constructor) return `${path}: typed array types differ`;
    const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    if (x.length !== y.length) return `${path}: lengths ${x.length} ≠ ${y.length}`;
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return `${path}: byte ${i} differs`;
    return null;
  }
  if (a instanceof Map || b instanceof Map) {
    if (!(a instanceof Map) || !(b instanceof Map)) return `${path}: map vs not`;
    return exactDiff(Object.fromEntries(a), Object.fromEntries(b), path);
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return `${path}: arrays differ in shape`;
    for (let i = 0; i < a.length; i++) {
      const d = exactDiff(a[i], b[i], `${path}[${i}]`);
      if (d) return d;
    }
    return null;
  }
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined).sort();
    const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined).sort();
    if (ka.join('\u0001') !== kb.join('\u0001')) return `${path}: keys [${ka.join(', ')}] ≠ [${kb.join(', ')}]`;
    for (const k of ka) {
      const d = exactDiff((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}.${k}`);
      if (d) return d;
    }
    return null;
  }
  return Object.is(a, b) ? null : `${path}: ${String(a)} ≠ ${String(b)}`;
}
