import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** One row of a benchmark table: metric, measured value, unit, and the goal or baseline beside it. */
export interface BenchRow {
  section: string;
  metric: string;
  value: number;
  unit: string;
  /** What the value is judged against ("≤ 6", "4 (fp32)"), empty when none. */
  compare: string;
  /** true/false when the row has a goal, undefined when it is informational. */
  pass?: boolean;
}

/** Prints rows as an aligned table. */
export function printTable(title: string, rows: readonly BenchRow[]): void {
  const fmt = (v: number) =>
    Math.abs(v) >= 1000 ? v.toLocaleString('en-US', { maximumFractionDigits: 0 }) : v.toPrecision(4);
  const cells = rows.map((r) => [
    r.section,
    r.metric,
    fmt(r.value),
    r.unit,
    r.compare,
    r.pass === undefined ? '' : r.pass ? 'yes' : 'NO',
  ]);
  const head = ['section', 'metric', 'value', 'unit', 'goal / baseline', 'met'];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) =>
    `| ${c.map((x, i) => (i === 2 ? x.padStart(widths[i]!) : x.padEnd(widths[i]!))).join(' | ')} |`;
  console.log(`\n${title}\n`);
  console.log(line(head));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const c of cells) console.log(line(c));
}

/** Writes `{ name, date, machine, rows, extra }` to bench/results/<name>.json and returns the path. */
export function writeResults(
  name: string,
  rows: readonly BenchRow[],
  extra: Record<string, unknown> = {},
): string {
  const dir = join(dirname(fileURLToPath(import.meta.url)), 'results');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.json`);
  const os = process.platform;
  writeFileSync(
    path,
    `${JSON.stringify({ name, date: new Date().toISOString(), node: process.version, os, rows, ...extra }, null, 2)}\n`,
  );
  return path;
}

/** Runs `fn` repeatedly for at least `minMs` (and `minRuns` times) and returns ms per run. */
export function timeIt(fn: () => void, minMs = 300, minRuns = 3): number {
  fn(); // warm-up
  let runs = 0;
  const start = performance.now();
  let elapsed = 0;
  while (runs < minRuns || elapsed < minMs) {
    fn();
    runs++;
    elapsed = performance.now() - start;
  }
  return elapsed / runs;
}
