/**
 * "Your own checkpoint…" on a language agent's card: a folder picker (`<input type=file
 * webkitdirectory multiple>`) that seats a Hugging Face Llama checkpoint folder as that agent
 * (Session.seatCheckpoint: config.json and the memory estimate first, then the load in the seat's
 * worker with progress and Cancel), and what the seat holds — the checkpoint's name (folder and
 * short hash), its parameters, the memory estimate and what this browser keeps of it. A seat a
 * share link names but this browser lacks says which checkpoint it needs and offers the picker
 * for exactly that folder. `dropFiles` lets the card take the folder (or its files) dropped on it.
 * A choice beside the picker says how the weights are stored — q8, q4 or f32 (each option with
 * the estimate's total once a folder is seated): picked before a folder, it is what the folder
 * loads as; changed on a seated checkpoint, it re-seats it so (Session.setSeatQuant: re-estimated
 * and refused before anything is allocated when it does not fit).
 * docs/models.md, "Your own checkpoint", says how it works and what is not done yet.
 *
 * Not here: reading and storing the files (hfFiles.ts), the team (session.ts).
 */
import { useState, type DragEvent } from 'react';
import type { QuantKind } from '../../model/quant';
import { formatBytes } from '../../model/hfConfig';
import { PAGE_SEAT_QUANT, SEAT_QUANTS, seatQuant, type FileLike } from '../hfFiles';
import type { Session } from '../session';
import { hfSwapRefusal } from '../../sat/hfSeat';
import { useSession } from '../sessionContext';
import { usePlayground, type SeatView } from '../store';

/** The files directly inside a dropped folder, named as a folder picker names them ("folder/file"). */
async function folderFiles(dir: FileSystemDirectoryEntry): Promise<FileLike[]> {
  const reader = dir.createReader();
  const entries: FileSystemEntry[] = [];
  for (;;) {
    const batch = await new Promise<FileSystemEntry[]>((resolve, reject) => reader.readEntries(resolve, reject));
    if (batch.length === 0) break; // readEntries answers in batches until an empty one
    entries.push(...batch);
  }
  const files = entries.filter((x): x is FileSystemFileEntry => x.isFile);
  return Promise.all(
    files.map(async (x) => {
      const f = await new Promise<File>((resolve, reject) => x.file(resolve, reject));
      return { name: f.name, size: f.size, webkitRelativePath: `${dir.name}/${f.name}`, arrayBuffer: () => f.arrayBuffer() };
    }),
  );
}

/**
 * The card's drop handler: a folder dropped whole (its own files; sub-folders are not read), or
 * the folder's files selected and dragged, go to seat `agent`.
 */
export function dropFiles(session: Session, agent: number, expectHash?: string) {
  return (e: DragEvent<HTMLElement>): void => {
    if (e.dataTransfer.files.length === 0) return;
    e.preventDefault();
    // Entries must be taken while the event lasts; they are read after.
    const dirs = [...e.dataTransfer.items].map((i) => i.webkitGetAsEntry?.() ?? null).filter((x): x is FileSystemDirectoryEntry => x?.isDirectory === true);
    const plain = [...e.dataTransfer.files] as FileLike[];
    void (async () => {
      let list = plain;
      if (dirs.length === 1) {
        try {
          list = await folderFiles(dirs[0]!);
        } catch (err) {
          session.store.setState({ error: `Agent ${agent}'s checkpoint: the dropped folder "${dirs[0]!.name}" could not be read (${err instanceof Error ? err.message : String(err)}); pick it with the folder picker instead. The team was not changed.` });
          return;
        }
      }
      await session.seatCheckpoint(agent, list, expectHash);
    })();
  };
}

function stored(v: number | string | undefined): string {
  if (v === undefined) return '';
  return typeof v === 'number' ? `kept in this browser: ${formatBytes(v)}` : `not kept in this browser: ${v}`;
}

export function CheckpointPicker({ agent, seat }: { readonly agent: number; readonly seat: SeatView | undefined }) {
  const session = useSession();
  const busy = usePlayground((s) => s.status === 'loading' || s.status === 'busy' || s.status === 'running');
  const config = usePlayground((s) => s.config);
  const swapNote = seat && !seat.missing && config ? hfSwapRefusal(config, agent, seat.name) : null;
  const expect = seat?.missing ? seat.hash : undefined;
  // Before a folder is seated the choice is this card's (and the session's, for a drop); after, the seat's.
  const [chosen, setChosen] = useState<QuantKind | null>(null);
  const quant = seat && !seat.missing ? (seat.quant ?? PAGE_SEAT_QUANT) : (chosen ?? seat?.quant ?? PAGE_SEAT_QUANT);
  const choice = (
    <label className="checkpoint-quant" title="How the checkpoint's weights are stored in its worker: Q8 or Q4 blocks (quantized on load), or f32 as read (small checkpoints); the estimate follows the choice">
      stored
      <select
        value={quant}
        disabled={busy}
        data-testid={`checkpoint-${agent}-quant`}
        onChange={(e) => {
          const q = seatQuant(e.currentTarget.value) ?? PAGE_SEAT_QUANT;
          setChosen(q);
          void session.chooseSeatQuant(agent, q);
        }}
      >
        {SEAT_QUANTS.map((q) => (
          <option key={q} value={q}>
            {q}
            {seat?.needsBy?.[q] ? ` (needs about ${seat.needsBy[q]})` : ''}
          </option>
        ))}
      </select>
    </label>
  );
  const picker = (
    <label className="checkpoint-pick" title="A Hugging Face Llama-family folder (config.json, model.safetensors, tokenizer.json); it loads in this agent's worker, stored as the choice beside says, with LoRA adapters to train">
      {seat?.missing ? 'Pick its folder…' : seat ? 'Another checkpoint…' : 'Your own checkpoint…'}
      <input
        type="file"
        multiple
        disabled={busy}
        data-testid={`checkpoint-${agent}-input`}
        ref={(el) => el?.setAttribute('webkitdirectory', '')}
        onChange={(e) => {
          const list = e.currentTarget.files ? ([...e.currentTarget.files] as FileLike[]) : [];
          e.currentTarget.value = ''; // the same folder may be picked again
          if (list.length > 0) void session.seatCheckpoint(agent, list, expect);
        }}
      />
    </label>
  );
  return (
    <div className="checkpoint" data-testid={`checkpoint-${agent}`}>
      {seat && !seat.missing && (
        <div className="checkpoint-seat">
          <span data-testid={`checkpoint-${agent}-name`} title={`folder hash ${seat.hash}`}>
            checkpoint <strong>{seat.name}</strong>
          </span>
          {seat.params !== undefined && <span data-testid={`checkpoint-${agent}-params`}>{seat.params.toLocaleString('en')} base params (frozen, {seat.quant ?? PAGE_SEAT_QUANT})</span>}
          <span data-testid={`checkpoint-${agent}-stored`}>{stored(seat.stored)}</span>
          {seat.needs && <span title={seat.estimate} data-testid={`checkpoint-${agent}-needs`}>needs about {seat.needs} (estimate)</span>}
        </div>
      )}
      {seat?.missing && (
        <div className="checkpoint-missing" data-testid={`checkpoint-${agent}-missing`} role="status">
          The link seats checkpoint <strong>{seat.name}</strong> (hash {seat.hash.slice(0, 8)}…) here, and this browser does not have it: agent {agent} runs the shipped
          model until you pick that folder.
        </div>
      )}
      {swapNote && (
        <div className="checkpoint-missing" data-testid={`checkpoint-${agent}-swap`} role="status">
          {swapNote}
        </div>
      )}
      <div className="checkpoint-actions">
        {picker}
        {choice}
        {seat && (
          <button type="button" className="tiny" disabled={busy} data-testid={`checkpoint-${agent}-clear`} onClick={() => void session.clearCheckpoint(agent)}>
            shipped model
          </button>
        )}
      </div>
    </div>
  );
}
