/**
 * "Your own checkpoint…" on a language agent's card: a folder picker (or a drop, `dropFiles`) that
 * seats a Hugging Face Llama checkpoint or an ONNX model folder as that agent — config.json and
 * the memory estimate first, then the load in the seat's worker with progress and Cancel — and
 * what the seat holds. Choices beside the picker: how the weights are stored (q8, q4 or f32; on a
 * seated checkpoint a change re-seats it) and, for ONNX, trainable or frozen. A seat a share link
 * names but this browser lacks asks for exactly that folder. docs/models.md says how it works.
 *
 * Not here: reading and storing the files (hfFiles.ts), the team (session.ts).
 */
import { useState, type DragEvent } from 'react';
import type { QuantKind } from '../../model/quant';
import { formatBytes } from '../../model/hfConfig';
import { PAGE_SEAT_QUANT, SEAT_QUANTS, seatQuant, type FileLike } from '../hfFiles';
import { ONNX_SEAT_MODES, type OnnxSeatMode } from '../onnxFiles';
import { describeOnnxSeatInfo, useOnnxSeatInfo } from '../onnxSeatInfo';
import type { Session } from '../session';
import { hfSwapRefusal } from '../../sat/hfSeatLimits';
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

/** A seat's measured sampling speed in words: tokens read and written per second, and the new ones alone. */
export function speedWords(s: { readonly promptTokens: number; readonly newTokens: number; readonly ms: number }): string {
  const per = (n: number): string => {
    const r = n / (s.ms / 1000);
    return r >= 100 ? Math.round(r).toLocaleString('en') : r.toPrecision(2);
  };
  return `samples ${per(s.promptTokens + s.newTokens)} tokens/s (${per(s.newTokens)} new tokens/s), measured here`;
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
  const onnxInfo = useOnnxSeatInfo(session, agent, !!seat?.onnx && !seat.missing);
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
  const [mode, setMode] = useState<OnnxSeatMode>(seat?.onnx?.mode ?? 'trainable');
  const modeChoice = (
    <label className="checkpoint-quant" title="For an ONNX model folder: trainable maps its weights into the playground's model (Llama-family graphs; checked against onnxruntime-web on this preset's prompts) and trains LoRA adapters; frozen runs the graph itself in onnxruntime-web (WebGPU where the browser has an adapter, else wasm) and never updates it">
      ONNX
      <select
        value={mode}
        disabled={busy}
        data-testid={`checkpoint-${agent}-onnx-mode`}
        onChange={(e) => {
          const m = ONNX_SEAT_MODES.find((x) => x === e.currentTarget.value) ?? 'trainable';
          setMode(m);
          session.chooseOnnxMode(agent, m);
        }}
      >
        {ONNX_SEAT_MODES.map((m) => (
          <option key={m} value={m}>
            {m}
          </option>
        ))}
      </select>
    </label>
  );
  const picker = (
    <label className="checkpoint-pick" title="A Hugging Face Llama-family folder (config.json, model.safetensors, tokenizer.json), or an ONNX model folder (config.json, tokenizer.json, onnx/model.onnx or another .onnx file with its data); it loads in this agent's worker, as the choices beside say">
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
          {seat.onnx && (
            <span data-testid={`checkpoint-${agent}-onnx`}>
              ONNX {seat.onnx.file}, {seat.onnx.mode === 'frozen' ? 'frozen: run by onnxruntime-web, never updated' : 'trainable: mapped into the model, checked against onnxruntime-web'}
            </span>
          )}
          {seat.onnx && onnxInfo && <span data-testid={`checkpoint-${agent}-onnx-info`}>{describeOnnxSeatInfo(onnxInfo)}</span>}
          {seat.onnx && seat.onnxGraphs && (
            <label className="checkpoint-quant" title="The folder's graphs: choose one, then pick the folder again to seat it (the seat keeps the graph it was seated with until then)">
              Graph
              <select
                defaultValue={seat.onnx.file}
                disabled={busy}
                data-testid={`checkpoint-${agent}-onnx-graph`}
                onChange={(e) => session.chooseOnnxFile(agent, e.currentTarget.value)}
              >
                {seat.onnxGraphs.map((g) => (
                  <option key={g} value={g}>
                    {g}
                  </option>
                ))}
              </select>
            </label>
          )}
          {seat.params !== undefined && seat.params > 0 && (seat.onnx?.mode !== 'frozen') && <span data-testid={`checkpoint-${agent}-params`}>{seat.params.toLocaleString('en')} base params (frozen, {seat.quant ?? PAGE_SEAT_QUANT})</span>}
          <span data-testid={`checkpoint-${agent}-stored`}>{stored(seat.stored)}</span>
          {seat.needs && <span title={seat.estimate} data-testid={`checkpoint-${agent}-needs`}>needs about {seat.needs} (estimate)</span>}
          {seat.speed && seat.speed.ms > 0 && (
            <span
              data-testid={`checkpoint-${agent}-speed`}
              title={`Measured in this seat's worker since the team was built: ${seat.speed.calls.toLocaleString('en')} sampling calls read ${seat.speed.promptTokens.toLocaleString('en')} prompt tokens and wrote ${seat.speed.newTokens.toLocaleString('en')} new ones in ${(seat.speed.ms / 1000).toFixed(1)} s`}
            >
              {speedWords(seat.speed)}
            </span>
          )}
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
      {!seat && (
        <p className="checkpoint-needs" data-testid={`checkpoint-${agent}-needs-help`}>
          A folder of your own: a Hugging Face Llama checkpoint (config.json, model.safetensors or its shards, tokenizer.json), or an ONNX model folder
          (config.json, tokenizer.json, onnx/model.onnx or model_q4.onnx… with its data file), seated trainable or frozen as chosen. Nothing is uploaded.
        </p>
      )}
      <div className="checkpoint-actions">
        {picker}
        {choice}
        {modeChoice}
        {seat && (
          <button type="button" className="tiny" disabled={busy} data-testid={`checkpoint-${agent}-clear`} onClick={() => void session.clearCheckpoint(agent)}>
            shipped model
          </button>
        )}
      </div>
    </div>
  );
}
