/**
 * The charts as the page loads them: the plotting code (recharts and every chart of ./index) is
 * its own chunk, fetched as soon as the page starts (the J chart is on the first screen) but kept
 * out of the main chunk, so the header, the step controls, the timeline and the game view work
 * before it arrives. Each chart shows a calm placeholder until then.
 */
import { type ComponentProps, type ComponentType, lazy, type NamedExoticComponent, Suspense } from 'react';
import type * as Plots from './index';

const load = () => import('./index');
void load();

/** The names ./index exports a memoised component under: its charts (and the timeline). */
type ChartName = { [K in keyof typeof Plots]: (typeof Plots)[K] extends NamedExoticComponent<never> ? K : never }[keyof typeof Plots];
type LazyCharts = { readonly [K in ChartName]: ComponentType<ComponentProps<(typeof Plots)[K]>> };

function lazyChart(name: string): ComponentType<object> {
  const C = lazy(async () => ({ default: (await load())[name as ChartName] as unknown as ComponentType<object> }));
  function LazyChart(props: object) {
    return (
      <Suspense fallback={<div className="chart chart-loading muted">Loading the charts…</div>}>
        <C {...props} />
      </Suspense>
    );
  }
  LazyChart.displayName = `Lazy${name}`;
  return LazyChart;
}

const made = new Map<string, ComponentType<object>>();

/**
 * Every chart of ./index by its name, without this file listing them: `const { JChart } =
 * lazyCharts` makes the lazy JChart on first ask and gives the same component after. Only
 * capitalised names are charts (React's tooling probes others, such as `$$typeof`).
 */
export const lazyCharts = new Proxy({} as LazyCharts, {
  get(_, name) {
    if (typeof name !== 'string' || !/^[A-Z]/.test(name)) return undefined;
    let c = made.get(name);
    if (!c) made.set(name, (c = lazyChart(name)));
    return c;
  },
});
