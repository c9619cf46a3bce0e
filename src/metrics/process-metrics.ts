import { collectDefaultMetrics, Gauge, type Registry } from 'prom-client';
import { InvalidArgumentError } from '../errors/index.ts';

/**
 * What a served `/metrics` carries beside the member's own series: `cohort_build_info` (always 1,
 * labelled with the Cohort version and the Node.js version, so a fleet's versions can be counted
 * and joined onto any series) and prom-client's default process and Node.js metrics
 * (`process_cpu_seconds_total`, `process_resident_memory_bytes`, `nodejs_eventloop_lag_seconds`,
 * …), less the gauges prom-client names `_total`. Call once per registry, in the process that serves it (the defaults describe that process).
 */
export function addProcessMetrics(registry: Registry, version: string): void {
  if (typeof version !== 'string' || version === '') {
    throw new InvalidArgumentError('version must be a non-empty string', { details: { name: 'version' } });
  }
  new Gauge<'version' | 'node'>({
    name: 'cohort_build_info',
    help: 'Always 1: the Cohort version and the Node.js version of this process.',
    labelNames: ['version', 'node'],
    registers: [registry],
  }).set({ version, node: process.version }, 1);
  const before = new Set(registry.getMetricsAsArray().map((m) => m.name));
  collectDefaultMetrics({ register: registry });
  // prom-client's `nodejs_active_{handles,requests,resources}_total` are gauges; a `_total` name
  // promises a counter (promtool refuses it). Their per-type siblings without the suffix stay.
  for (const m of registry.getMetricsAsArray()) {
    if (!before.has(m.name) && m.name.endsWith('_total') && (m as { type?: unknown }).type !== 'counter')
      registry.removeSingleMetric(m.name);
  }
}
