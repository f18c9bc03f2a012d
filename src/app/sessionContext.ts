/**
 * How components reach the page's Session (session.ts): main.tsx makes one and provides it here;
 * a component calls `useSession()` to step, share or export. A context rather than a module
 * variable, so that nothing outside the page's own tree holds the session.
 *
 * Not here: the session itself, or the store components read (store/).
 */
import { createContext, useContext } from 'react';
import type { Session } from './session';

export const SessionContext = createContext<Session | null>(null);

/** The page's Session; throws when a component is rendered outside <SessionContext.Provider>. */
export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('No Session here: render the page inside <SessionContext.Provider value={session}> (main.tsx does).');
  return s;
}
