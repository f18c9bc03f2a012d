/**
 * The charts as the page loads them: the plotting code (recharts and every chart of ./index) is
 * its own chunk, fetched as soon as the page starts (not on first use — the first screen has the J
 * chart) but not in the page's main chunk, so the header, the step controls, the timeline and the
 * game view draw and work before it arrives. Each chart shows a calm placeholder until then.
 *
 * Not here: the charts themselves (./index and its files), which tests import directly.
 */
import { type ComponentProps, type ComponentType, lazy, Suspense } from 'react';
import type * as Plots from './index';

const load = () => import('./index');
// Start fetching at once: the J chart is on the first screen.
void load();

type ChartName = 'JChart' | 'WaterfallChart' | 'AdvantageChart' | 'KlChart' | 'BetaChart' | 'ViolationChart' | 'OrderChart' | 'TranscriptTable';

function lazyChart<K extends ChartName>(name: K): ComponentType<ComponentProps<(typeof Plots)[K]>> {
  type P = ComponentProps<(typeof Plots)[K]>;
  const C = lazy(async () => ({ default: (await load())[name] as unknown as ComponentType<object> }));
  function LazyChart(props: P) {
    return (
      <Suspense fallback={<div className="chart chart-loading muted">Loading the charts…</div>}>
        <C {...(props as object)} />
      </Suspense>
    );
  }
  LazyChart.displayName = `Lazy${name}`;
  return LazyChart;
}

export const JChart = lazyChart('JChart');
export const WaterfallChart = lazyChart('WaterfallChart');
export const AdvantageChart = lazyChart('AdvantageChart');
export const KlChart = lazyChart('KlChart');
export const BetaChart = lazyChart('BetaChart');
export const ViolationChart = lazyChart('ViolationChart');
export const OrderChart = lazyChart('OrderChart');
export const TranscriptTable = lazyChart('TranscriptTable');
