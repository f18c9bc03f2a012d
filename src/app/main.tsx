/**
 * Browser entry point: makes the page's one Session (over the page's store) and its autosave
 * (over IndexedDB), mounts <App/> into #root (index.html) with the session in context, loads the
 * stylesheet, and boots the session (share link, autosave or the default preset — boot.ts).
 *
 * Not here: any state or logic — see App.tsx, store/, session.ts, autosave.ts and boot.ts.
 */
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App';
import { Autosave } from './autosave';
import { boot } from './boot';
import { browserStore } from './persist';
import { Session } from './session';
import { SessionContext } from './sessionContext';
import { usePlayground } from './store';
import './styles.css';

const session = new Session(usePlayground);
const autosave = new Autosave(session, browserStore());

const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root element to mount the playground into.');
createRoot(root).render(
  <StrictMode>
    <SessionContext.Provider value={session}>
      <App />
    </SessionContext.Provider>
  </StrictMode>,
);
void boot(session, autosave);
