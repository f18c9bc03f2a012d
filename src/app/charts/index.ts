/**
 * The charts' barrel: one import for the session (`import { JChart, … } from './charts'`).
 * Components are props-only (no store access); their data helpers come from series.ts.
 *
 * Not here: the timeline (../components/Timeline.tsx, re-exported for convenience) or any wiring.
 */
export { JChart, type JChartProps } from './JChart';
export { WaterfallChart, type WaterfallChartProps } from './WaterfallChart';
export { AdvantageChart, type AdvantageChartProps } from './AdvantageChart';
export { KlChart, type KlChartProps } from './KlChart';
export { ViolationChart, type ViolationChartProps } from './ViolationChart';
export { BetaChart, type BetaChartProps } from './BetaChart';
export { OrderChart, type OrderChartProps } from './OrderChart';
export { TranscriptTable, type TranscriptTableProps } from './TranscriptTable';
export { ChartFrame, HeldGlyph, Toggle, useMeasuredWidth } from './ChartFrame';
export { Timeline, type TimelineProps } from '../components/Timeline';
export * from './series';
