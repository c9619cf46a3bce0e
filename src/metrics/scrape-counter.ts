import { Counter, Gauge, type Registry } from 'prom-client';

/** Name, help text and label names of a metric read at scrape time. */
export interface ScrapedMetricSpec<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames?: readonly L[];
}

type Labels<L extends string> = Partial<Record<L, string>>;

/**
 * A counter that mirrors a running total kept elsewhere (a service's `stats()`): at each scrape
 * `read` returns the current totals per label set and the counter adds what grew since the last
 * scrape. A total that went down (its source restarted) is taken as a fresh count from 0.
 * `initial` label sets are exported at 0 before anything is counted.
 */
export function scrapedCounter<L extends string>(
  registry: Registry,
  spec: ScrapedMetricSpec<L>,
  read: () => Iterable<readonly [Labels<L>, number]>,
  initial: readonly Labels<L>[] = [{}],
): Counter<L> {
  const last = new Map<string, number>();
  const counter: Counter<L> = new Counter<L>({
    name: spec.name,
    help: spec.help,
    labelNames: spec.labelNames ?? [],
    registers: [registry],
    collect() {
      for (const [labels, value] of read()) {
        if (!Number.isFinite(value) || value < 0) continue;
        const key = labelKey(labels);
        const before = last.get(key) ?? 0;
        const delta = value >= before ? value - before : value;
        last.set(key, value);
        counter.inc(labels, delta);
      }
    },
  });
  for (const labels of initial) counter.inc(labels, 0);
  return counter;
}

/**
 * A gauge set at each scrape from `read` (label set → value). A label set that `read` no longer
 * returns is 0 when listed in `initial`, gone otherwise.
 */
export function scrapedGauge<L extends string>(
  registry: Registry,
  spec: ScrapedMetricSpec<L>,
  read: () => Iterable<readonly [Labels<L>, number]>,
  initial: readonly Labels<L>[] = [],
): Gauge<L> {
  const gauge: Gauge<L> = new Gauge<L>({
    name: spec.name,
    help: spec.help,
    labelNames: spec.labelNames ?? [],
    registers: [registry],
    collect() {
      gauge.reset();
      for (const labels of initial) gauge.set(labels, 0);
      for (const [labels, value] of read()) {
        if (Number.isFinite(value)) gauge.set(labels, value);
      }
    },
  });
  for (const labels of initial) gauge.set(labels, 0);
  return gauge;
}

function labelKey(labels: Labels<string>): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)));
}
