// Resident memory of the soak's processes, read from /proc, and the growth figure the soak is
// judged by: median RSS over the last rounds against the median right after warm-up.
import { readFileSync } from 'node:fs';

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
 * The soak's windows over rounds 1…`rounds`: warm-up is the first 10% (at least 20 rounds, at
 * most half), the baseline the next 10% (at least 5 rounds), the end the last 10% (at least 5).
 * Inclusive round ranges.
 */
export function soakWindows(rounds: number): {
  warmUp: number;
  baseline: readonly [number, number];
  end: readonly [number, number];
} {
  const warmUp = Math.min(Math.max(20, Math.ceil(rounds * 0.1)), Math.floor(rounds / 2));
  const span = Math.max(5, Math.ceil(rounds * 0.1));
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
export function rssGrowth(series: RssSeries, rounds: number): Map<string, RssGrowth> {
  const { baseline, end } = soakWindows(rounds);
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
