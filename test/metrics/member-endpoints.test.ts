// Aggregators and site agents serve their metrics: real `cohort aggregator` and `cohort agent`
// processes started with `--metrics-port 0` over a real nats-server run one committed round; each
// prints where it serves, answers `GET /metrics` on loopback with an exposition `promtool check
// metrics` accepts, carrying `cohort_build_info`, the process metrics and its own counters of
// the round; anything but `GET /metrics` is refused. A bad port fails the command before it
// connects, naming the flag.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Federation, type MemberProcess, waitFor } from '../helpers/federation.ts';
import { PROMTOOL, parseExposition, promtool } from '../helpers/promtool.ts';
import { cohort } from '../helpers/run-cli.ts';
import { recoveryOverrides, waitLine } from '../recovery/recovery-helpers.ts';

const SITES = ['site-1', 'site-2', 'site-3'];

describe('/metrics on aggregators and site agents (real processes)', () => {
  let f: Federation;
  const members = new Map<string, MemberProcess>();
  const urls = new Map<string, string>();

  beforeAll(async () => {
    f = await Federation.create('mendp', { aggregators: 1, sites: 3, overrides: recoveryOverrides(3) });
    members.set('agg-1', f.spawn('aggregator', 'agg-1', ['--metrics-port', '0']));
    for (const s of SITES) members.set(s, f.spawn('agent', s, ['--metrics-port', '0']));
    for (const [id, p] of members) {
      await waitFor(
        `${id} to serve its metrics`,
        () => p.lines.some((l) => l.startsWith('metrics on ')),
        60_000,
      );
      urls.set(id, p.lines.find((l) => l.startsWith('metrics on '))!.slice('metrics on '.length));
    }
    // Two rounds: a site whose first heartbeat the coordinator has not seen yet sits the first out.
    const coordinator = f.spawn('coordinator', 'coordinator', ['--rounds', '2']);
    await waitLine(f, coordinator, /^done: 2 rounds, 2 committed/);
    // The sites count the last decision once they switched.
    await waitFor(
      'every site switched to the last commit',
      () => SITES.every((s) => members.get(s)!.logged('switched to the committed model', { round: 2 })),
      30_000,
    );
  }, 120_000);
  afterAll(async () => {
    await f?.stop();
  });

  it('binds loopback by default and serves an exposition promtool accepts', async () => {
    for (const [id, url] of urls) {
      expect(url, id).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const res = await fetch(url);
      expect(res.status, id).toBe(200);
      expect(res.headers.get('content-type'), id).toMatch(/^text\/plain; version=0\.0\.4/);
      const text = await res.text();
      if (PROMTOOL !== undefined) {
        const check = promtool(['check', 'metrics'], text);
        expect(check.code, `${id}: ${check.output}`).toBe(0);
      }
      const samples = parseExposition(text);
      const build = samples.find((s) => s.name === 'cohort_build_info');
      expect(build, id).toMatchObject({ labels: { node: process.version }, value: 1 });
      expect(build!.labels.version, id).toMatch(/^\d+\.\d+\.\d+/);
      for (const name of [
        'process_cpu_seconds_total',
        'process_resident_memory_bytes',
        'nodejs_eventloop_lag_seconds',
      ])
        expect(
          samples.some((s) => s.name === name),
          `${id}: ${name}`,
        ).toBe(true);
    }
  });

  it('counts the rounds it served, as the log records them', async () => {
    const read = async (id: string) => parseExposition(await (await fetch(urls.get(id)!)).text());
    const value = (
      samples: Awaited<ReturnType<typeof read>>,
      name: string,
      labels: Record<string, string> = {},
    ) =>
      samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        ?.value;
    const decisions = (await f.decisions()).filter((d) => d.round >= 1);
    expect(decisions.map((d) => d.commit)).toEqual([true, true]);
    const contributed = (site: string) =>
      decisions.filter((d) => d.aggregate!.contributors.some((c) => c.site === site)).length;
    const agg = await read('agg-1');
    expect(value(agg, 'cohort_aggregator_updates_added_total')).toBe(
      decisions.reduce((n, d) => n + d.aggregate!.contributors.length, 0),
    );
    expect(value(agg, 'cohort_aggregator_partials_sent_total', { outcome: 'sent' })).toBe(2);
    for (const s of SITES) {
      const site = await read(s);
      expect(value(site, 'cohort_site_rounds_trained_total'), s).toBe(contributed(s));
      expect(value(site, 'cohort_site_votes_total', { vote: 'yes' }), s).toBe(
        decisions.filter((d) => d.voters.includes(s)).length,
      );
      expect(value(site, 'cohort_site_votes_total', { vote: 'yes' }), s).toBeGreaterThanOrEqual(1);
    }
  });

  it('serves nothing but GET /metrics', async () => {
    const url = urls.get('site-1')!;
    expect((await fetch(url.replace(/\/metrics$/, '/'))).status).toBe(404);
    expect((await fetch(url.replace(/\/metrics$/, '/metrics/x'))).status).toBe(404);
    expect((await fetch(url, { method: 'POST', body: 'x' })).status).toBe(405);
    const head = await fetch(url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });

  it('refuses a bad --metrics-port before connecting, naming the flag', async () => {
    for (const port of ['70000', '-1', 'x', '80.5']) {
      const r = await cohort(
        'agent',
        '--config',
        f.dep.configPath,
        '--member',
        'site-1',
        '--metrics-port',
        port,
      );
      expect(r.status, port).toBe(2);
      expect(r.stderr, port).toMatch(/--metrics-port is "[^"]*", expects a port 0\.\.65535/);
    }
  });
});
