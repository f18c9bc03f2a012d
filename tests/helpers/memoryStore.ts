/**
 * An in-memory PartStore (src/app/persist.ts) for tests: a Map behind the same calls idb-keyval
 * makes, with values copied in and out by structuredClone as IndexedDB copies them (so a test sees
 * what a reload would read, never an object the page still holds). `failNext` makes the next
 * write throw, as a full disk or a closed database would.
 *
 * Not here: IndexedDB itself (the browser e2e test covers it).
 */
import type { PartStore } from '../../src/app/persist';

export class MemoryStore implements PartStore {
  readonly map = new Map<string, unknown>();
  /** When set, the next setMany / delMany throws it (then it is cleared). */
  failNext: unknown = null;

  private maybeFail(): void {
    const e = this.failNext;
    if (e !== null) {
      this.failNext = null;
      throw e;
    }
  }

  async get(key: string): Promise<unknown> {
    return structuredClone(this.map.get(key));
  }

  async getMany(keys: readonly string[]): Promise<unknown[]> {
    return keys.map((k) => structuredClone(this.map.get(k)));
  }

  async setMany(entries: readonly (readonly [string, unknown])[]): Promise<void> {
    this.maybeFail();
    for (const [k, v] of entries) this.map.set(k, structuredClone(v));
  }

  async delMany(keys: readonly string[]): Promise<void> {
    this.maybeFail();
    for (const k of keys) this.map.delete(k);
  }

  async keys(): Promise<string[]> {
    return [...this.map.keys()];
  }
}
