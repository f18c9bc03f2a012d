/**
 * Browser entry point: mounts <App/> into #root (index.html) and loads the stylesheet.
 *
 * Not here: any state or logic — see App.tsx, store.ts and run.ts.
 */
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App';
import './styles.css';

const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root element to mount the playground into.');
createRoot(root).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
