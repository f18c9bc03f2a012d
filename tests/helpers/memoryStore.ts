/**
 * An in-memory PartStore (src/app/persist.ts) for tests: a Map behind the same calls idb-keyval
 * makes, with values copied in and out by structuredClone as IndexedDB copies them (so a test sees
 * what a reload would read, never an object the page still holds). `failNext` makes the next
 * write throw, as a full disk or a closed database would. `HeldStore` holds its calls until
 * released and then runs them in the order they were made, as IndexedDB runs transactions.
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

  async setMany(entries: readonly (readonly [string, unknown])[], drop?: (key: string) => boolean): Promise<void> {
    this.maybeFail();
    const written = new Set(entries.map(([k]) => k));
    for (const [k, v] of entries) this.map.set(k, structuredClone(v));
    if (drop) for (const k of [...this.map.keys()]) if (!written.has(k) && drop(k)) this.map.delete(k);
  }

  async delMany(keys: readonly string[]): Promise<void> {
    this.maybeFail();
    for (const k of keys) this.map.delete(k);
  }

  async keys(): Promise<string[]> {
    return [...this.map.keys()];
  }
}

/**
 * A MemoryStore whose calls, while `hold()` is on, wait until `release()` and then run in the
 * order they were made (IndexedDB's transactions on one store run in the order they are created).
 * `calls` counts the calls made, held or not.
 */
export class HeldStore extends MemoryStore {
  calls = 0;
  private held: (() => void)[] | null = null;

  hold(): void {
    this.held ??= [];
  }

  release(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const go of held) go();
  }

  private async turn(): Promise<void> {
    this.calls++;
    if (this.held) await new Promise<void>((go) => this.held!.push(go));
  }

  override async get(key: string): Promise<unknown> {
    await this.turn();
    return super.get(key);
  }

  override async getMany(keys: readonly string[]): Promise<unknown[]> {
    await this.turn();
    return super.getMany(keys);
  }

  override async setMany(entries: readonly (readonly [string, unknown])[], drop?: (key: string) => boolean): Promise<void> {
    await this.turn();
    return super.setMany(entries, drop);
  }

  override async delMany(keys: readonly string[]): Promise<void> {
    await this.turn();
    return super.delMany(keys);
  }

  override async keys(): Promise<string[]> {
    await this.turn();
    return super.keys();
  }
}
