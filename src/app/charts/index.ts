/**
 * The charts' barrel, and their one list: each line below names a chart once, and lazy.tsx loads
 * every chart by these names. Each chart's file exports it memoised (React.memo), so it redraws
 * only when its own props change, not when the page's status flips busy → ready around a step.
 * Components take props only (no store); their data helpers come from series.ts.
 */
import { memo } from 'react';
import { Timeline as TimelineView } from '../components/Timeline';

export { JChart } from './JChart';
export { WaterfallChart } from './WaterfallChart';
export { AdvantageChart } from './AdvantageChart';
export { KlChart } from './KlChart';
export { ViolationChart } from './ViolationChart';
export { BetaChart } from './BetaChart';
export { OrderChart } from './OrderChart';
export { TranscriptTable } from './TranscriptTable';
/** The timeline (../components/Timeline.tsx), memoised as the charts are. */
export const Timeline = memo(TimelineView);
export * from './series';
