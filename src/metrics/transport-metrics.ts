import type { Registry } from 'prom-client';
import { TRANSPORT_DROP_REASONS } from '../transport/index.ts';
import { perScrape } from './metrics-provider.ts';
import { scrapedCounter } from './scrape-counter.ts';

/** The transport counters a service's metrics read (`NatsTransport.stats`). */
export type TransportStatsReader = () => {
  readonly retries: number;
  readonly permissionErrors: number;
  readonly dropped: Readonly<Record<string, number>>;
};

/**
 * Registers the transport's counters, read at scrape time: every drop by reason (the whole
 * connection: each subscription and the reply inbox), request retries and permission errors.
 * Returns what a scrape calls first, so it reads the transport afresh.
 */
export function transportMetrics(registry: Registry, read: TransportStatsReader): () => void {
  const stats = perScrape(read);
  scrapedCounter(
    registry,
    {
      name: 'cohort_transport_dropped_total',
      help: 'Chunks or messages the transport dropped before any handler ran, by reason (every subscription and the reply inbox).',
      labelNames: ['reason'],
    },
    () => TRANSPORT_DROP_REASONS.map((reason) => [{ reason }, stats.get().dropped[reason] ?? 0] as const),
    TRANSPORT_DROP_REASONS.map((reason) => ({ reason })),
  );
  scrapedCounter(
    registry,
    { name: 'cohort_transport_retries_total', help: 'Request attempts after the first.' },
    () => [[{}, stats.get().retries]],
  );
  scrapedCounter(
    registry,
    {
      name: 'cohort_transport_permission_errors_total',
      help: 'Permission violations the NATS server reported for this connection.',
    },
    () => [[{}, stats.get().permissionErrors]],
  );
  return () => stats.fresh();
}
