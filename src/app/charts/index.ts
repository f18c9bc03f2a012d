/**
 * The charts' barrel: one import for the session (`import { JChart, … } from './charts'`).
 * Components are props-only (no store access); their data helpers come from series.ts. Every
 * chart and the timeline are exported memoised (React.memo): a chart re-draws only when its own
 * props change, so the page's status flipping busy → ready around a step re-draws none of them.
 *
 * Not here: the timeline (../components/Timeline.tsx, re-exported for convenience) or any wiring.
 */
import { memo } from 'react';
import { JChart as JChartView } from './JChart';
export type { JChartProps } from './JChart';
export const JChart = memo(JChartView);
import { WaterfallChart as WaterfallChartView } from './WaterfallChart';
export type { WaterfallChartProps } from './WaterfallChart';
export const WaterfallChart = memo(WaterfallChartView);
import { AdvantageChart as AdvantageChartView } from './AdvantageChart';
export type { AdvantageChartProps } from './AdvantageChart';
export const AdvantageChart = memo(AdvantageChartView);
import { KlChart as KlChartView } from './KlChart';
export type { KlChartProps } from './KlChart';
export const KlChart = memo(KlChartView);
import { ViolationChart as ViolationChartView } from './ViolationChart';
export type { ViolationChartProps } from './ViolationChart';
export const ViolationChart = memo(ViolationChartView);
import { BetaChart as BetaChartView } from './BetaChart';
export type { BetaChartProps } from './BetaChart';
export const BetaChart = memo(BetaChartView);
import { OrderChart as OrderChartView } from './OrderChart';
export type { OrderChartProps } from './OrderChart';
export const OrderChart = memo(OrderChartView);
import { TranscriptTable as TranscriptTableView } from './TranscriptTable';
export type { TranscriptTableProps } from './TranscriptTable';
export const TranscriptTable = memo(TranscriptTableView);
export { ChartFrame, HeldGlyph, Toggle, useMeasuredWidth } from './ChartFrame';
import { Timeline as TimelineView } from '../components/Timeline';
export type { TimelineProps } from '../components/Timeline';
export const Timeline = memo(TimelineView);
export * from './series';
