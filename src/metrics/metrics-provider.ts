import { Registry } from 'prom-client';

/** What `GET /metrics` serves: the exposition's content type and its text. */
export interface MetricsProvider {
  /** `Content-Type` of {@link text} (Prometheus text format 0.0.4). */
  readonly contentType: string;
  /** The exposition of every metric, read at this moment. */
  text(): Promise<string>;
}

/** A {@link MetricsProvider} over `registry`. */
export function registryProvider(registry: Registry): MetricsProvider {
  return {
    contentType: registry.contentType,
    text: () => registry.metrics(),
  };
}

/** `registry`, or a new one: each service instance has its own (never prom-client's global one). */
export function ownRegistry(registry: Registry | undefined): Registry {
  return registry ?? new Registry();
}

/** A snapshot of a service's stats shared by the collectors of one scrape. */
export interface ScrapeSnapshot<T> {
  /** The snapshot: taken on the first call, kept until {@link fresh} or the next macrotask. */
  get(): T;
  /** Forgets the snapshot, so the next {@link get} reads again (call it as a scrape begins). */
  fresh(): void;
}

/**
 * Calls `read` at most once per scrape: the collectors share one snapshot of a service's stats
 * instead of each taking its own.
 */
export function perScrape<T>(read: () => T): ScrapeSnapshot<T> {
  let cached: { value: T } | undefined;
  return {
    get() {
      if (cached === undefined) {
        const taken = { value: read() };
        cached = taken;
        setImmediate(() => {
          if (cached === taken) cached = undefined;
        });
      }
      return cached.value;
    },
    fresh() {
      cached = undefined;
    },
  };
}
