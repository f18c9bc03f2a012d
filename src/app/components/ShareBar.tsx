/**
 * Sharing and files: "Copy link" (settings, seed and the current step in the URL hash — opening it
 * replays the run), "Export" (the experiment as a .satexp file: settings, metrics, agent weights)
 * and "Import" (validated; a bad file gets a specific message and changes nothing).
 *
 * Not here: the formats (share.ts, savefile.ts) or start-up (boot.ts).
 */
import { useRef, useState } from 'react';
import { experimentBytes, openExperimentBytes, shareLink } from '../boot';
import { describeError } from '../session';
import { useSession } from '../sessionContext';
import { EXPERIMENT_EXTENSION } from '../savefile';
import { usePlayground } from '../store';

export function ShareBar() {
  const session = useSession();
  const status = usePlayground((s) => s.status);
  const [link, setLink] = useState<string | null>(null);
  const file = useRef<HTMLInputElement>(null);
  const working = status === 'busy' || status === 'running' || status === 'loading';

  const copy = async () => {
    try {
      const url = await shareLink(session);
      setLink(url);
      try {
        await navigator.clipboard.writeText(url);
        usePlayground.setState({ notice: 'Link copied. Opening it replays this run to this step.' });
      } catch {
        usePlayground.setState({ notice: 'Copy the link from the box (this page may not use the clipboard).' });
      }
    } catch (e) {
      usePlayground.setState({ error: describeError(e, 'Nothing was changed.') });
    }
  };

  const exportFile = () => {
    const bytes = experimentBytes(session);
    if (!bytes) {
      usePlayground.setState({ notice: 'Nothing to export yet.' });
      return;
    }
    const s = usePlayground.getState();
    const blob = new Blob([bytes.slice().buffer], { type: 'application/octet-stream' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = `sat-${s.preset}-seed${s.config?.seed ?? 0}-stage${s.stages.length}${EXPERIMENT_EXTENSION}`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  };

  const importFile = async (f: File | undefined) => {
    if (!f) return;
    const bytes = new Uint8Array(await f.arrayBuffer());
    await openExperimentBytes(session, bytes, `The file “${f.name}”`);
    if (file.current) file.current.value = '';
  };

  return (
    <div className="sharebar">
      <button type="button" className="small" data-testid="copy-link" disabled={working} onClick={() => void copy()} title="A link to these settings and this step; opening it replays the run">
        Copy link
      </button>
      {link && <input className="share-link" data-testid="share-link" readOnly value={link} onFocus={(e) => e.currentTarget.select()} aria-label="Share link" />}
      <button type="button" className="small" data-testid="export" disabled={working} onClick={exportFile} title="Save settings, metrics and agent weights as a file">
        Export
      </button>
      <label className="file-btn" title="Open an exported experiment file">
        <input ref={file} type="file" accept={EXPERIMENT_EXTENSION} data-testid="import" disabled={working} onChange={(e) => void importFile(e.target.files?.[0])} />
        <span>Import</span>
      </label>
    </div>
  );
}
