// serveMetrics: GET /metrics is the provider's exposition with its content type; a scrape that
// fails answers 500 and hands the error over; bad listen arguments are refused by name.
// addProcessMetrics: cohort_build_info and the default process metrics, on the registry given.
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors/index.ts';
import { addProcessMetrics, type MetricsServer, serveMetrics } from '../../src/metrics/index.ts';

describe('serveMetrics', () => {
  let server: MetricsServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('serves the provider at GET /metrics on the address asked for', async () => {
    server = await serveMetrics(
      { contentType: 'text/plain; version=0.0.4; charset=utf-8', text: async () => 'up 1\n' },
      { host: '127.0.0.1', port: 0 },
    );
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const res = await fetch(server.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(await res.text()).toBe('up 1\n');
    expect((await fetch(`${server.url}?x=1`)).status).toBe(200);
  });

  it('answers 500 when the scrape fails and hands the error over', async () => {
    const seen: unknown[] = [];
    const boom = new Error('stats unavailable');
    server = await serveMetrics(
      { contentType: 'text/plain', text: () => Promise.reject(boom) },
      { host: '127.0.0.1', port: 0 },
      (err) => seen.push(err),
    );
    expect((await fetch(server.url)).status).toBe(500);
    expect(seen).toEqual([boom]);
  });

  it('refuses a port or host that cannot be listened on, by name', async () => {
    const provider = { contentType: 'text/plain', text: async () => '' };
    for (const port of [-1, 65_536, 1.5, Number.NaN])
      await expect(serveMetrics(provider, { host: '127.0.0.1', port })).rejects.toThrow(/listen\.port/);
    await expect(serveMetrics(provider, { host: '', port: 0 })).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});

describe('addProcessMetrics', () => {
  it('adds cohort_build_info (1, with the versions) and the default process metrics', async () => {
    const registry = new Registry();
    addProcessMetrics(registry, '1.2.3');
    const text = await registry.metrics();
    expect(text).toContain(`cohort_build_info{version="1.2.3",node="${process.version}"} 1`);
    expect(text).toMatch(/^process_cpu_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
    // Only counters end in _total (prom-client's active-handle gauges are left out).
    expect(text).not.toMatch(/^# TYPE \S+_total (gauge|histogram|summary)$/m);
    expect(text).toMatch(/^# TYPE nodejs_active_handles gauge$/m);
    expect(() => addProcessMetrics(new Registry(), '')).toThrow(/version/);
  });
});
