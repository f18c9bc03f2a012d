/**
 * Autosave (issue "The playground", item 6): one experiment file (savefile.ts bytes) kept in the
 * browser's IndexedDB so that a reload restores the last completed agent step.
 *
 *   saveAutosave(bytes: Uint8Array): Promise<PersistResult>          replace the autosave
 *   loadAutosave(): Promise<LoadResult>                                { ok, bytes | null }
 *   clearAutosave(): Promise<PersistResult>                            forget it (a new experiment)
 *
 *   PersistResult = { ok: true } | { ok: false, error }
 *   LoadResult    = { ok: true, bytes: Uint8Array | null, savedAt?: string } | { ok: false, error }
 *
 * Storage: database "sat-playground" (version 1), object store "autosave", one record under the
 * key "current": { bytes, savedAt }. Calls are queued, so saves land in the order they were asked.
 *
 * Nothing here throws or rejects: no IndexedDB (private mode, a sandboxed frame, Node), a refused
 * or blocked open, a full disk (QuotaExceededError) or an aborted transaction each come back as
 * `{ ok: false, error }` with a message for the banner — the experiment in the page is untouched,
 * and the message says to export it to a file. An open that never answers times out
 * (PERSIST_TIMEOUT_MS) instead of hanging the caller.
 *
 * Not here: the file format and its checks (savefile.ts), deciding when to save (session.ts),
 * anything React. Unit tests cover only the "no IndexedDB" path (Node has none); the browser e2e
 * test covers the rest.
 */

export const PERSIST_DB = 'sat-playground';
export const PERSIST_STORE = 'autosave';
const DB_VERSION = 1;
const KEY = 'current';
/** Longest wait for IndexedDB to answer one request, in milliseconds. */
export const PERSIST_TIMEOUT_MS = 10_000;

export type PersistResult = { readonly ok: true } | { readonly ok: false; readonly error: string };
export type LoadResult = { readonly ok: true; readonly bytes: Uint8Array | null; readonly savedAt?: string } | { readonly ok: false; readonly error: string };

const KEEP = 'The experiment in this page is unaffected; use "Export experiment" to keep it in a file.';

class PersistFail {
  constructor(readonly reason: string) {}
}

/** A DOMException (or anything) from IndexedDB, in words. */
function explain(e: unknown, doing: string): string {
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

let dbPromise: Promise<IDBDatabase> | null = null;

function openDb(doing: string): Promise<IDBDatabase> {
  if (dbPromise) return dbPromise;
  const p = new Promise<IDBDatabase>((resolve, reject) => {
    const idb: IDBFactory | undefined = typeof indexedDB !== 'undefined' ? indexedDB : undefined;
    if (!idb) {
      reject(new PersistFail(`This browser offers no IndexedDB storage here (private browsing?), so the page cannot ${doing}.`));
      return;
    }
    let req: IDBOpenDBRequest;
    try {
      req = idb.open(PERSIST_DB, DB_VERSION);
    } catch (e) {
      reject(new PersistFail(explain(e, doing)));
      return;
    }
    req.onupgradeneeded = () => {
      if (!req.result.objectStoreNames.contains(PERSIST_STORE)) req.result.createObjectStore(PERSIST_STORE);
    };
    req.onsuccess = () => {
      const db = req.result;
      // Another tab upgrading the schema: step aside, reopen on the next call.
      db.onversionchange = () => {
        db.close();
        dbPromise = null;
      };
      db.onclose = () => {
        dbPromise = null;
      };
      resolve(db);
    };
    req.onerror = () => reject(new PersistFail(explain(req.error, doing)));
    req.onblocked = () => reject(new PersistFail(`Another tab of the playground holds the saved data open, so this page cannot ${doing}; close the other tab and reload.`));
  });
  dbPromise = withTimeout(p, doing);
  dbPromise.catch(() => {
    dbPromise = null; // try again next time (e.g. after the other tab closed)
  });
  return dbPromise;
}

/** Runs one request in its own transaction; resolves when the transaction completes. */
async function run<T>(mode: IDBTransactionMode, doing: string, op: (store: IDBObjectStore) => IDBRequest<T>): Promise<T> {
  const db = await openDb(doing);
  return withTimeout(
    new Promise<T>((resolve, reject) => {
      let tx: IDBTransaction;
      let req: IDBRequest<T>;
      try {
        tx = db.transaction(PERSIST_STORE, mode);
        req = op(tx.objectStore(PERSIST_STORE));
      } catch (e) {
        reject(new PersistFail(explain(e, doing)));
        return;
      }
      tx.oncomplete = () => resolve(req.result);
      tx.onabort = () => reject(new PersistFail(explain(tx.error ?? req.error, doing)));
      tx.onerror = () => undefined; // onabort follows and reports
    }),
    doing,
  );
}

/** One call at a time, in order. */
let queue: Promise<unknown> = Promise.resolve();
function queued<T>(fn: () => Promise<T>): Promise<T> {
  const next = queue.then(fn, fn);
  queue = next.catch(() => undefined);
  return next;
}

function reason(e: unknown, doing: string): string {
  return `${e instanceof PersistFail ? e.reason : explain(e, doing)} ${KEEP}`;
}

/** Replaces the autosave with `bytes` (an experiment file). */
export function saveAutosave(bytes: Uint8Array): Promise<PersistResult> {
  const doing = 'autosave the experiment';
  // Store exactly these bytes (a view would otherwise clone its whole underlying buffer).
  const copy = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
  return queued(async (): Promise<PersistResult> => {
    try {
      await run('readwrite', doing, (s) => s.put({ bytes: copy, savedAt: new Date().toISOString() }, KEY));
      return { ok: true };
    } catch (e) {
      return { ok: false, error: reason(e, doing) };
    }
  });
}

/** The autosaved experiment file, or null when there is none. */
export function loadAutosave(): Promise<LoadResult> {
  const doing = 'read the autosaved experiment';
  return queued(async (): Promise<LoadResult> => {
    try {
      const rec: unknown = await run('readonly', doing, (s) => s.get(KEY));
      if (rec === undefined || rec === null) return { ok: true, bytes: null };
      const r = rec as { bytes?: unknown; savedAt?: unknown };
      const bytes = r.bytes instanceof Uint8Array ? r.bytes : r.bytes instanceof ArrayBuffer ? new Uint8Array(r.bytes) : null;
      if (!bytes) return { ok: false, error: `The autosaved experiment is not in a form this playground reads; it was left as it is. ${KEEP}` };
      return typeof r.savedAt === 'string' ? { ok: true, bytes, savedAt: r.savedAt } : { ok: true, bytes };
    } catch (e) {
      return { ok: false, error: reason(e, doing) };
    }
  });
}

/** Forgets the autosave. */
export function clearAutosave(): Promise<PersistResult> {
  const doing = 'clear the autosaved experiment';
  return queued(async (): Promise<PersistResult> => {
    try {
      await run('readwrite', doing, (s) => s.delete(KEY));
      return { ok: true };
    } catch (e) {
      return { ok: false, error: reason(e, doing) };
    }
  });
}
