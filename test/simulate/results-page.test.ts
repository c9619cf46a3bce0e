// Every experiment table of docs/results.md is `cohort simulate --table` over a tracked metrics file:
// the block between `<!-- results: NAME -->` and `<!-- /results -->` must equal the table of
// docs/experiments/NAME.metrics.jsonl under config/experiments/NAME.yaml. After new runs:
// COHORT_WRITE_RESULTS=1 npx vitest run test/simulate/results-page.test.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadExperiment, readRoundMetrics, resultsTable } from '../../src/simulate/index.ts';

const PAGE = 'docs/results.md';
const BLOCK = /<!-- results: ([a-z0-9-]+) -->\n([\s\S]*?)<!-- \/results -->/g;

function rendered(name: string): string {
  const runs = loadExperiment(`config/experiments/${name}.yaml`, { env: {} }).runs;
  return resultsTable(runs, readRoundMetrics([`docs/experiments/${name}.metrics.jsonl`]));
}

describe('docs/results.md experiment tables', () => {
  const text = readFileSync(PAGE, 'utf8');
  const blocks = [...text.matchAll(BLOCK)];

  it('are the tables of the tracked metrics files', () => {
    expect(blocks.length).toBeGreaterThan(0);
    if (process.env.COHORT_WRITE_RESULTS === '1') {
      writeFileSync(
        PAGE,
        text.replace(
          BLOCK,
          (_all, name: string) => `<!-- results: ${name} -->\n\n${rendered(name)}\n\n<!-- /results -->`,
        ),
      );
      return;
    }
    for (const [, name, body] of blocks) expect(body!.trim(), name).toBe(rendered(name!));
  });
});
