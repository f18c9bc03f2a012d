/**
 * The autosave's storage: a key-value store that survives a reload (`PartStore`; the page's is
 * IndexedDB database "sat-playground", store "autosave", through idb-keyval — 600 bytes for
 * get/set over one store with atomic setMany), and the one place that turns its failures into
 * messages: `guarded` never throws — no IndexedDB, a refused open, a full disk or an aborted
 * transaction come back as `{ ok: false, error }`, a store that never answers times out, and
 * calls are queued so writes land in order.
 *
 * Not here: what is stored under which key (autosave.ts) or the bytes' format (savefile.ts).
 */
import { createStore, delMany, get, getMany, keys, promisifyRequest, setMany, type UseStore } from 'idb-keyval';

export const PERSIST_DB = 'sat-playground';
export const PERSIST_STORE = 'autosave';
/** Longest wait for the store to answer one call, in milliseconds. */
export const PERSIST_TIMEOUT_MS = 10_000;

/** What the autosave needs of a store: idb-keyval's calls, so that a Map can stand in for IndexedDB. */
export interface PartStore {
  get(key: string): Promise<unknown>;
  getMany(keys: readonly string[]): Promise<unknown[]>;
  /**
   * All or nothing (one transaction). With `drop`, the keys already stored that it accepts (and that
   * `entries` does not write) are deleted in the same transaction, so two writes in flight at once
   * land one after the other, each whole.
   */
  setMany(entries: readonly (readonly [string, unknown])[], drop?: (key: string) => boolean): Promise<void>;
  delMany(keys: readonly string[]): Promise<void>;
  keys(): Promise<string[]>;
}

export type Guarded<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string };

const KEEP = 'The experiment in this page is unaffected; use "Export experiment" to keep it in a file.';

class PersistFail {
  constructor(readonly reason: string) {}
}

/** Thrown by browserStore when the page has no IndexedDB at all. */
class NoIndexedDb {}

/** A DOMException (or anything) from IndexedDB, in words. */
function explain(e: unknown, doing: string): string {
  if (e instanceof PersistFail) return e.reason;
  if (e instanceof NoIndexedDb) return `This browser offers no IndexedDB storage here (private browsing?), so the page cannot ${doing}.`;
  const name = e instanceof Error || (typeof DOMException !== 'undefined' && e instanceof DOMException) ? (e as { name: string }).name : '';
  const msg = e instanceof Error ? e.message : e === null || e === undefined ? '' : String(e);
  if (name === 'QuotaExceededError') return `The browser refused to ${doing}: its storage for this site is full.`;
  if (name === 'SecurityError' || name === 'InvalidStateError') return `The browser does not allow storage here (private browsing, a sandboxed frame or blocked site data), so it cannot ${doing}.`;
  if (name === 'VersionError') return `A newer version of the playground in another tab owns the saved data, so this page cannot ${doing}.`;
  return `The browser could not ${doing}${name || msg ? ` (${[name, msg].filter(Boolean).join(': ')})` : ''}.`;
}

function withTimeout<T>(p: Promise<T>, doing: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new PersistFail(`The browser's storage did not answer within ${PERSIST_TIMEOUT_MS / 1000} s, so the page could not ${doing}.`)), PERSIST_TIMEOUT_MS);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

/**
 * The page's store: IndexedDB through idb-keyval; opened on first use, reopened after a failed open.
 * `db` / `name` default to the autosave's; seated checkpoints have a database of their own
 * (src/app/hfFiles.ts), since idb-keyval creates one object store per database.
 */
export function browserStore(db = PERSIST_DB, name = PERSIST_STORE): PartStore {
  let store: UseStore | null = null;
  const use = async <T>(call: (s: UseStore) => Promise<T>): Promise<T> => {
    if (typeof indexedDB === 'undefined') throw new NoIndexedDb();
    store ??= createStore(db, name);
    try {
      return await call(store);
    } catch (e) {
      store = null; // idb-keyval keeps a failed open; try afresh next time (e.g. after another tab closed)
      throw e;
    }
  };
  return {
    get: (key) => use((s) => get(key, s)),
    getMany: (ks) => use((s) => getMany([...ks], s)),
    setMany: (entries, drop) =>
      use((s) =>
        drop
          ? s('readwrite', (os) => {
              const written = new Set(entries.map(([k]) => k));
              for (const [k, v] of entries) os.put(v, k);
              const all = os.getAllKeys();
              all.onsuccess = () => {
                for (const k of all.result) if (typeof k === 'string' && !written.has(k) && drop(k)) os.delete(k);
              };
              return promisifyRequest(os.transaction);
            })
          : setMany(entries.map(([k, v]) => [k, v]), s),
      ),
    delMany: (ks) => use((s) => delMany([...ks], s)),
    keys: () => use(async (s) => (await keys(s)).map(String)),
  };
}

/** One call at a time, in order (per page: there is one autosave store). */
let queue: Promise<unknown> = Promise.resolve();

/**
 * Runs `fn` against the store after the calls before it; never throws. `doing` completes "could not
 * …" in the message ("autosave the experiment"). `now`: runs `fn` at once, beside a call in flight
 * (a page being left cannot wait for it); calls after it still wait for both.
 */
export function guarded<T>(doing: string, fn: () => Promise<T>, now = false): Promise<Guarded<T>> {
  const run = async (): Promise<Guarded<T>> => {
    try {
      return { ok: true, value: await withTimeout(fn(), doing) };
    } catch (e) {
      return { ok: false, error: `${explain(e, doing)} ${KEEP}` };
    }
  };
  const next = now ? run() : queue.then(run, run);
  queue = now ? Promise.all([queue, next]) : next;
  return next;
}

/** The message for a stored value that is not what this playground writes. */
export function unreadable(what: string): string {
  return `The autosaved experiment is not in a form this playground reads (${what}); it was left as it is. ${KEEP}`;
}
