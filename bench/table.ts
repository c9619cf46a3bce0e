import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, release, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The floor a measurement is judged against, measured in the same run on the same machine (the
 * site pipeline beside SEAL's bare encode+encrypt, say), in the row's unit.
 */
export interface BenchFloor {
  /** What was measured as the floor ("SEAL encode+encrypt alone"). */
  metric: string;
  value: number;
}

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
  /** The floor measured in the same run; docs/results.md shows value / floor beside it. */
  floor?: BenchFloor;
  /** A detail row: kept in the JSON, left out of the table in docs/results.md. */
  detail?: boolean;
}

/** The machine a result was measured on, recorded in every result file. */
export interface BenchMachine {
  cpu: string;
  /** Cores the process may use (`os.availableParallelism()`). */
  cores: number;
  memoryGiB: number;
  node: string;
  platform: string;
  arch: string;
  kernel: string;
}

/** What `writeResults` writes: one tracked file per benchmark, `bench/results/<name>.json`. */
export interface BenchResultFile {
  name: string;
  /** ISO 8601 time the run finished. */
  date: string;
  machine: BenchMachine;
  /** The command that produced the file (`npm run bench -- <name>`, with its environment). */
  command: string;
  rows: BenchRow[];
  [extra: string]: unknown;
}

/** The folder of tracked result files. */
export const RESULTS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'results');

/** This machine, as recorded in result files. */
export function benchMachine(): BenchMachine {
  return {
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    cores: availableParallelism(),
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: process.platform,
    arch: process.arch,
    kernel: release(),
  };
}

/** A value as the tables print it: integers and values from 1,000 up with thousands separators, else four significant digits. */
export function formatValue(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  // Counts print as counts (500 rounds, not 500.0).
  return Number.isInteger(v) || Math.abs(v) >= 1000
    ? v.toLocaleString('en-US', { maximumFractionDigits: 0 })
    : v.toPrecision(4);
}

/** value / floor, as the tables print it (`0.93×`). */
export function formatRatio(row: BenchRow): string {
  if (row.floor === undefined || row.floor.value === 0) return '';
  const r = row.value / row.floor.value;
  return `${r >= 100 ? r.toFixed(0) : r >= 10 ? r.toFixed(1) : r >= 0.1 ? r.toFixed(2) : r.toPrecision(2)}×`;
}

/** Prints rows as an aligned table. */
export function printTable(title: string, rows: readonly BenchRow[]): void {
  const cells = rows.map((r) => [
    r.section,
    r.metric,
    formatValue(r.value),
    r.unit,
    r.floor === undefined ? '' : `${formatValue(r.floor.value)} (${r.floor.metric})`,
    formatRatio(r),
    r.compare,
    r.pass === undefined ? '' : r.pass ? 'yes' : 'NO',
  ]);
  const head = ['section', 'metric', 'value', 'unit', 'floor (same run)', 'ratio', 'goal / baseline', 'met'];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) =>
    `| ${c.map((x, i) => (i === 2 ? x.padStart(widths[i]!) : x.padEnd(widths[i]!))).join(' | ')} |`;
  console.log(`\n${title}\n`);
  console.log(line(head));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const c of cells) console.log(line(c));
}

/** The environment variables that shape benchmarks (`COHORT_BENCH_*`), as a command prefix. */
function benchEnv(): string {
  return Object.entries(process.env)
    .filter(([k]) => k.startsWith('COHORT_BENCH_'))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v} `)
    .join('');
}

/** The command line's flags and their values (`--rounds 3`): bench names are left out. */
function benchFlags(): string[] {
  const args = process.argv.slice(2);
  return args.filter((a, i) => a.startsWith('-') || args[i - 1]?.startsWith('--') === true);
}

/**
 * Writes `{ name, date, machine, command, rows, ...extra }` to the tracked `bench/results/<name>.json`
 * and returns the path. Rows must hold finite values: a NaN in a published table is a bug.
 */
export function writeResults(
  name: string,
  rows: readonly BenchRow[],
  extra: Record<string, unknown> = {},
): string {
  for (const r of rows) {
    if (!Number.isFinite(r.value)) throw new Error(`bench ${name}: row "${r.metric}" has value ${r.value}`);
    if (r.floor !== undefined && !Number.isFinite(r.floor.value))
      throw new Error(`bench ${name}: row "${r.metric}" has floor ${r.floor.value}`);
  }
  mkdirSync(RESULTS_DIR, { recursive: true });
  const path = join(RESULTS_DIR, `${name}.json`);
  const file: BenchResultFile = {
    name,
    date: new Date().toISOString(),
    machine: benchMachine(),
    command: `${benchEnv()}npm run bench -- ${[name, ...benchFlags()].join(' ')}`,
    rows: [...rows],
    ...extra,
  };
  writeFileSync(path, `${JSON.stringify(file, null, 2)}\n`);
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
