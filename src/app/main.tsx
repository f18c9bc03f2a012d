/**
 * Browser entry point: mounts <App/> into #root (index.html), loads the stylesheet, and boots the
 * session (share link, autosave or the default preset — boot.ts).
 *
 * Not here: any state or logic — see App.tsx, store/, session.ts and boot.ts.
 */
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App';
import { boot } from './boot';
import './styles.css';

const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root element to mount the playground into.');
createRoot(root).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
void boot();
