/**
 * An agent's label in its colour (a dot and its index), used wherever an agent is named so that
 * agent j looks the same in the table now and in the timeline and charts later.
 *
 * Not here: the palette itself (theme.ts).
 */
import type { CSSProperties } from 'react';
import { agentColor } from '../theme';

export function AgentChip({ agent, label }: { agent: number; label?: string }) {
  return (
    <span className="agent-chip" style={{ '--agent': agentColor(agent) } as CSSProperties} title={`agent ${agent}`}>
      {label ?? agent}
    </span>
  );
}
