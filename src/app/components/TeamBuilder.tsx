/**
 * The team builder: one card per agent in its colour — its model (for language teams, a shipped
 * size per agent), its own radius δ_i, the backend its worker runs on and the memory it holds —
 * and the update order σ as chips you can drag (or move with the ◂ ▸ buttons) to set a custom
 * order. Edits go to the settings form (agentModels, deltas, order = custom, customOrder) and take
 * effect on Apply, like every other setting. A language agent's card also takes a Hugging Face
 * checkpoint folder of your own (CheckpointPicker.tsx: the picker, or the files dropped on the
 * card), which builds a fresh team at once.
 *
 * Not here: running agents (session.ts), reading checkpoints (hfFiles.ts) or colours (theme.ts).
 */
import { useState, type CSSProperties } from 'react';
import { agentDelta, isLlmTask } from '../../sat/config';
import { short } from '../format';
import { agentKind, wasmSimd } from '../backendLine';
import { useSession } from '../sessionContext';
import { isDirty, setField, usePlayground } from '../store';
import { agentColor } from '../theme';
import { CheckpointPicker, dropFiles } from './CheckpointPicker';
import { tooltip } from './Controls';

/** Whether this browser runs the CPU kernels' WebAssembly SIMD (the header's line asks the same). */
const SIMD = wasmSimd();

function bytes(n: number | undefined): string {
  if (n === undefined || !Number.isFinite(n)) return '—';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function parseList(text: string): number[] {
  return text
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '')
    .map(Number);
}

/** The order σ the form describes (custom order when set, else 0..n−1 as a starting point). */
function formOrder(orderText: string, customText: string, n: number): number[] {
  const custom = parseList(customText);
  const valid = orderText === 'custom' && custom.length === n && [...custom].sort((a, b) => a - b).every((v, i) => v === i);
  return valid ? custom : Array.from({ length: n }, (_, i) => (orderText === 'reverse' ? n - 1 - i : i));
}

/** The folded team builder's one line: each agent in its colour with its model, and the order. */
export function TeamSummary() {
  const agents = usePlayground((s) => s.agents);
  const cfg = usePlayground((s) => s.config);
  if (!cfg) return <span className="muted">Team</span>;
  return (
    <span className="team-summary" data-testid="team-summary">
      <span className="team-summary-title">Team</span>
      {agents.map((a) => (
        <span key={a.index} className="agent-chip" style={{ '--agent': agentColor(a.index) } as CSSProperties}>
          agent {a.index} <span className="muted">{a.name}</span>
        </span>
      ))}
      <span className="muted">
        order {cfg.order === 'custom' && cfg.customOrder.length ? cfg.customOrder.join('→') : cfg.order}, {cfg.deltas.length ? `δ_i = ${cfg.deltas.map(short).join(', ')}` : `δ = ${short(cfg.delta)}`}, scheme {cfg.scheme} · open to edit
      </span>
    </span>
  );
}

export function TeamBuilder() {
  const agents = usePlayground((s) => s.agents);
  const seats = usePlayground((s) => s.seats);
  const session = useSession();
  const cfg = usePlayground((s) => s.config);
  const order = usePlayground((s) => s.form.order);
  const custom = usePlayground((s) => s.form.customOrder);
  const deltasText = usePlayground((s) => s.form.deltas);
  const modelsText = usePlayground((s) => s.form.agentModels);
  const modelText = usePlayground((s) => s.form.model);
  const hide = usePlayground((s) => s.hide);
  const dirty = usePlayground(isDirty);
  const [drag, setDrag] = useState<number | null>(null);
  if (!cfg || agents.length === 0) return null;
  const n = agents.length;
  const sigma = formOrder(order, custom, n);
  const setOrder = (next: number[]) => {
    setField('order', 'custom');
    setField('customOrder', next.join(','));
  };
  const move = (from: number, to: number) => {
    if (to < 0 || to >= n || from === to) return;
    const next = sigma.slice();
    const [x] = next.splice(from, 1);
    next.splice(to, 0, x!);
    setOrder(next);
  };
  const deltas = parseList(deltasText);
  const setDelta = (i: number, text: string) => {
    const list = Array.from({ length: n }, (_, j) => (deltas.length === n ? String(deltas[j]) : String(cfg.delta)));
    list[i] = text;
    setField('deltas', list.join(','));
  };
  const llm = isLlmTask(cfg.task);
  const sizes = cfg.task === 'arithmetic' ? ['S', 'M', 'L'] : ['S', 'M'];
  const models = modelsText.split(',').map((x) => x.trim()).filter((x) => x !== '');
  const setModel = (i: number, size: string) => {
    const list = Array.from({ length: n }, (_, j) => (models.length === n ? models[j]! : modelText));
    list[i] = size;
    setField('agentModels', list.every((m) => m === modelText) ? '' : list.join(','));
  };
  return (
    <section className="team" aria-label="Team" data-testid="team">
      <div className="team-agents">
        {agents.map((a) => (
          <div
            key={a.index}
            className="agent-card"
            data-testid={`agent-${a.index}`}
            style={{ '--agent': agentColor(a.index) } as CSSProperties}
            onDragOver={llm ? (e) => e.dataTransfer.types.includes('Files') && e.preventDefault() : undefined}
            onDrop={llm ? dropFiles(session, a.index, seats.find((x) => x.agent === a.index && x.missing)?.hash) : undefined}
          >
            <div className="agent-head">
              <span className="agent-dot" aria-hidden="true" />
              <strong>agent {a.index}</strong>
              <span className="muted">{a.name}</span>
            </div>
            <div className="agent-meta">
              <span title="Parameters the agent trains">{a.parameters.toLocaleString('en')} params</span>
              <span data-testid={`agent-${a.index}-backend`} title={`Where this agent's model, optimizer and kernels run: ${a.backend}`}>
                {agentKind(a.kind, a.backend, SIMD)}
              </span>
              {a.backend.startsWith('webgpu') ? (
                <span data-testid={`agent-${a.index}-memory`} title="GPU buffers this agent's device holds (parameters, gradients, optimizer state, activations)">
                  GPU {bytes(a.memoryBytes)}
                </span>
              ) : (
                <span data-testid={`agent-${a.index}-memory`} title="Parameters and optimizer state held by its worker">
                  {bytes(a.memoryBytes)}
                </span>
              )}
            </div>
            {llm && !hide.includes('agentModels') && !seats.some((x) => x.agent === a.index && !x.missing) && (
              <label className="agent-delta" title={tooltip('agentModels')}>
                model
                <select data-testid={`model-${a.index}`} value={models.length === n ? models[a.index] : modelText} onChange={(e) => setModel(a.index, e.target.value)}>
                  {sizes.map((z) => (
                    <option key={z} value={z}>
                      {cfg.task}-{z}
                    </option>
                  ))}
                </select>
              </label>
            )}
            {llm && !hide.includes('agentModels') && <CheckpointPicker agent={a.index} seat={seats.find((x) => x.agent === a.index)} />}
            {!hide.includes('deltas') && (
              <label className="agent-delta" title={tooltip('deltas')}>
                δ<sub>{a.index}</sub>
                <input
                  type="text"
                  inputMode="decimal"
                  data-testid={`delta-${a.index}`}
                  value={deltas.length === n ? String(deltas[a.index]) : short(agentDelta(cfg, a.index))}
                  onChange={(e) => setDelta(a.index, e.target.value)}
                />
              </label>
            )}
          </div>
        ))}
      </div>
      {!hide.includes('order') && n > 1 && (
        <div className="sigma" title={tooltip('customOrder')}>
          <span className="field-label">Update order σ (drag to reorder)</span>
          <ol className="sigma-list" data-testid="sigma">
            {sigma.map((agent, pos) => (
              <li
                key={agent}
                draggable
                className={`sigma-chip${drag === pos ? ' dragging' : ''}`}
                style={{ '--agent': agentColor(agent) } as CSSProperties}
                onDragStart={(e) => {
                  setDrag(pos);
                  e.dataTransfer.setData('text/plain', String(pos));
                }}
                onDragOver={(e) => e.preventDefault()}
                onDrop={(e) => {
                  e.preventDefault();
                  move(Number(e.dataTransfer.getData('text/plain')), pos);
                  setDrag(null);
                }}
                onDragEnd={() => setDrag(null)}
              >
                <button type="button" className="tiny" aria-label={`move agent ${agent} earlier`} disabled={pos === 0} onClick={() => move(pos, pos - 1)}>
                  ◂
                </button>
                <span>
                  {pos + 1}. agent {agent}
                </span>
                <button type="button" className="tiny" aria-label={`move agent ${agent} later`} disabled={pos === n - 1} onClick={() => move(pos, pos + 1)}>
                  ▸
                </button>
              </li>
            ))}
          </ol>
          <span className="muted small-note">
            now: order = {cfg.order}
            {dirty && ' · changes apply on Apply'}
          </span>
          {dirty && (
            <button type="button" className="primary small" data-testid="team-apply" onClick={() => void session.applySettings()} title="Build a fresh team with these settings">
              Apply changes
            </button>
          )}
        </div>
      )}
    </section>
  );
}
