/**
 * The timeline's window of drawn stages (components/Timeline.tsx): a long run draws the newest
 * TIMELINE_COLUMNS stages, or those around the selection, while its counts stay the whole run's.
 */
import { createElement as h } from 'react';
import { renderToString } from 'react-dom/server';
import { beforeAll, describe, expect, it } from 'vitest';
import { createTabularExperiment, runStages } from '../src/sat/experiment';
import { presetConfig } from '../src/sat/presets';
import type { StageRecord } from '../src/sat/stage';
import { Timeline, TIMELINE_COLUMNS, windowStart } from '../src/app/components/Timeline';

const STAGES = TIMELINE_COLUMNS + 5;
let records: StageRecord[] = [];

beforeAll(async () => {
  const exp = createTabularExperiment(presetConfig('climbing', { seed: 3, stages: STAGES }));
  records = await runStages(exp, STAGES);
}, 120_000);

const stagesDrawn = (html: string) => [...html.matchAll(/role="columnheader"[^>]*title="stage (\d+):/g)].map((m) => Number(m[1]));

describe('timeline window', () => {
  it('windowStart keeps the newest, or the paged-to end, and moves as little as needed for the selection', () => {
    expect(windowStart(10, null, null, 4)).toBe(6);
    expect(windowStart(3, null, null, 4)).toBe(0);
    expect(windowStart(10, 5, null, 4)).toBe(2);
    expect(windowStart(10, null, 1, 4)).toBe(1); // selection before the window: it becomes the first
    expect(windowStart(10, 5, 8, 4)).toBe(5); // after it: the last
    expect(windowStart(10, 5, 4, 4)).toBe(2); // inside: unchanged
    expect(windowStart(10, 99, null, 4)).toBe(6);
  });

  it('draws the newest stages of a long run, its counts the whole run\'s', () => {
    expect(records).toHaveLength(STAGES);
    const html = renderToString(h(Timeline, { nAgents: 3, records, selected: null, onSelect: () => {} }));
    expect(stagesDrawn(html)).toEqual(Array.from({ length: TIMELINE_COLUMNS }, (_, i) => STAGES - TIMELINE_COLUMNS + 1 + i));
    expect(Number(/data-testid="timeline" data-points="(\d+)"/.exec(html)![1])).toBe(3 * STAGES);
    expect(html.match(/data-testid="timeline-cell"/g)).toHaveLength(3 * TIMELINE_COLUMNS);
    expect(html).toContain(`stages ${STAGES - TIMELINE_COLUMNS + 1}–${STAGES} of ${STAGES}`);
    expect(html).toContain(`${STAGES} stages done`);
  });

  it('draws the selected stage when it is older than the window', () => {
    const html = renderToString(h(Timeline, { nAgents: 3, records, selected: { stage: 2, agent: 0 }, onSelect: () => {} }));
    expect(stagesDrawn(html)).toEqual(Array.from({ length: TIMELINE_COLUMNS }, (_, i) => 2 + i));
    expect(/<div[^>]*aria-selected="true"[^>]*>/.exec(html)![0]).toContain('data-stage="2"');
  });

  it('draws every stage of a short run, without a pager', () => {
    const html = renderToString(h(Timeline, { nAgents: 3, records: records.slice(0, 5), selected: null, onSelect: () => {} }));
    expect(stagesDrawn(html)).toEqual([1, 2, 3, 4, 5]);
    expect(html).not.toContain('timeline-pager');
  });
});
