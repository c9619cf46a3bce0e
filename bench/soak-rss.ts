// Resident memory of the soak's processes, read from /proc, and the growth figures the soak is
// judged by: median RSS over the last rounds against the median right after warm-up, and the
// growth of the upper envelope between the two halves of the measured rounds (phase-free).
import { existsSync, readFileSync } from 'node:fs';

/** VmRSS of `pid` in MiB, from /proc/<pid>/status; undefined once the process is gone. */
export function readRssMiB(pid: number): number | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(text);
  return m === null ? undefined : Number(m[1]) / 1024;
}

/** One sample per process per round reached: `rss[name][i]` was read when round `rounds[i]` was decided. */
export class RssSeries {
  readonly rounds: number[] = [];
  readonly rss = new Map<string, number[]>();
  readonly #pids: ReadonlyMap<string, number>;

  /** `pids`: process name → pid, in the order the tables list them. */
  constructor(pids: ReadonlyMap<string, number>) {
    this.#pids = pids;
    for (const name of pids.keys()) this.rss.set(name, []);
  }

  /** Reads every process's VmRSS now and files it under `round`; a process gone reads NaN. */
  sample(round: number): void {
    this.rounds.push(round);
    for (const [name, pid] of this.#pids) this.rss.get(name)!.push(readRssMiB(pid) ?? Number.NaN);
  }

  /** The samples as compact JSON: rounds, and per process MiB to 0.1. */
  toJson(): { rounds: number[]; rssMiB: Record<string, number[]> } {
    const rssMiB: Record<string, number[]> = {};
    for (const [name, values] of this.rss) rssMiB[name] = values.map((v) => Math.round(v * 10) / 10);
    return { rounds: [...this.rounds], rssMiB };
  }
}

/** The median of the finite values, NaN when none. */
export function median(values: readonly number[]): number {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return Number.NaN;
  const mid = v.length >> 1;
  return v.length % 2 === 1 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
}

/** The `q`-quantile (0…1, nearest rank) of the finite values, NaN when none. */
export function quantile(values: readonly number[], q: number): number {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return Number.NaN;
  return v[Math.min(v.length - 1, Math.max(0, Math.ceil(q * v.length) - 1))]!;
}

/**
 * The soak's windows over rounds 1…`rounds`: warm-up is the first `warmUp` rounds (default 10%, at
 * least 20, at most half), the baseline the next 10% of the rest (at least 5 rounds), the end the
 * last 10% of the rest (at least 5). Inclusive round ranges.
 */
export function soakWindows(
  rounds: number,
  warmUp = Math.min(Math.max(20, Math.ceil(rounds * 0.1)), Math.floor(rounds / 2)),
): {
  warmUp: number;
  baseline: readonly [number, number];
  end: readonly [number, number];
} {
  const span = Math.max(5, Math.ceil((rounds - warmUp) * 0.1));
  return {
    warmUp,
    baseline: [warmUp + 1, Math.min(rounds, warmUp + span)],
    end: [Math.max(warmUp + 1, rounds - span + 1), rounds],
  };
}

/** Growth of one process: median RSS (MiB) in the baseline and end windows, and (end − base) / base. */
export interface RssGrowth {
  readonly baseMiB: number;
  readonly endMiB: number;
  /** (endMiB − baseMiB) / baseMiB, as a fraction. */
  readonly growth: number;
}

/** Growth of each process of `series` between the baseline and end windows of `rounds` rounds. */
export function rssGrowth(series: RssSeries, rounds: number, warmUp?: number): Map<string, RssGrowth> {
  const { baseline, end } = soakWindows(rounds, warmUp);
  const inWindow = (values: readonly number[], [lo, hi]: readonly [number, number]) =>
    values.filter((_, i) => series.rounds[i]! >= lo && series.rounds[i]! <= hi);
  const out = new Map<string, RssGrowth>();
  for (const [name, values] of series.rss) {
    const baseMiB = median(inWindow(values, baseline));
    const endMiB = median(inWindow(values, end));
    out.set(name, { baseMiB, endMiB, growth: (endMiB - baseMiB) / baseMiB });
  }
  return out;
}

/** One line of bench/soak-probe.ts: memory of a process right after a full GC, bytes. */
interface ProbeLine {
  readonly n: number;
  readonly heapUsed: number;
  readonly external: number;
  readonly arrayBuffers: number;
  readonly rss: number;
}

/**
 * Live memory after a full GC: `heapMiB[name][i]` (V8 heap in use) and `externalMiB[name][i]`
 * (memory V8 objects hold outside the heap: buffers, SEAL's WebAssembly memory) at round
 * `rounds[i]`; NaN where the process did not answer that probe.
 */
export interface LiveSeries {
  readonly rounds: number[];
  readonly heapMiB: Record<string, number[]>;
  readonly externalMiB: Record<string, number[]>;
}

/** Reads each member's probe file: its n-th line answers the n-th probe (`rounds[n - 1]`). */
export function readLiveSeries(
  rounds: readonly number[],
  members: readonly { readonly name: string; readonly probeFile: string }[],
): LiveSeries {
  const mib = (b: number) => Math.round((b / 2 ** 20) * 10) / 10;
  const heapMiB: Record<string, number[]> = {};
  const externalMiB: Record<string, number[]> = {};
  for (const m of members) {
    const lines: ProbeLine[] = existsSync(m.probeFile)
      ? readFileSync(m.probeFile, 'utf8')
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l) as ProbeLine)
      : [];
    const byN = new Map(lines.map((l) => [l.n, l]));
    heapMiB[m.name] = rounds.map((_, i) => (byN.has(i + 1) ? mib(byN.get(i + 1)!.heapUsed) : Number.NaN));
    externalMiB[m.name] = rounds.map((_, i) => (byN.has(i + 1) ? mib(byN.get(i + 1)!.external) : Number.NaN));
  }
  return { rounds: [...rounds], heapMiB, externalMiB };
}

/** Growth of live memory (heap + external after a full GC) of each member between the baseline and end windows. */
export function liveGrowth(live: LiveSeries, rounds: number, warmUp?: number): Map<string, RssGrowth> {
  const { baseline, end } = soakWindows(rounds, warmUp);
  const out = new Map<string, RssGrowth>();
  for (const name of Object.keys(live.heapMiB)) {
    const total = live.heapMiB[name]!.map((h, i) => h + live.externalMiB[name]![i]!);
    const inWindow = ([lo, hi]: readonly [number, number]) =>
      total.filter((_, i) => live.rounds[i]! >= lo && live.rounds[i]! <= hi);
    const baseMiB = median(inWindow(baseline));
    const endMiB = median(inWindow(end));
    out.set(name, { baseMiB, endMiB, growth: (endMiB - baseMiB) / baseMiB });
  }
  return out;
}

/**
 * Growth of each process's upper envelope over the measured rounds (after `warmUp`): the 95th
 * percentile of its RSS in the second half of those rounds against the first half, scaled to
 * `perRounds` rounds (default: none; the halves' centres are half the measured span apart). When
 * each half holds a whole period of a bounded sawtooth (nats-server's block cache: ~500 rounds in
 * this soak), their peaks match whatever phase the two windows of {@link rssGrowth} catch, while a
 * leak raises the second half's peak by its rate times half the span.
 */
export function rssEnvelopeGrowth(
  series: RssSeries,
  rounds: number,
  warmUp?: number,
  perRounds?: number,
): Map<string, RssGrowth> {
  const w = soakWindows(rounds, warmUp);
  const half = (rounds - w.warmUp) / 2;
  const scale = (perRounds ?? half) / half;
  const out = new Map<string, RssGrowth>();
  for (const [name, values] of series.rss) {
    const first = values.filter(
      (_, i) => series.rounds[i]! > w.warmUp && series.rounds[i]! <= w.warmUp + half,
    );
    const second = values.filter((_, i) => series.rounds[i]! > w.warmUp + half);
    const baseMiB = quantile(first, 0.95);
    const endMiB = quantile(second, 0.95);
    out.set(name, { baseMiB, endMiB, growth: ((endMiB - baseMiB) / baseMiB) * scale });
  }
  return out;
}
