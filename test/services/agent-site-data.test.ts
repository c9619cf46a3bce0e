// Site agents on their own data: the data contract in federation.yaml, each site's files named by
// its own site configuration. A site whose files break the contract stops at start and never joins.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSiteConfig, parseSiteConfig } from '../../src/config/index.ts';
import { DataError, writeIdx } from '../../src/data/index.ts';
import { mnistDataContract, writeDemoSiteData } from '../../src/demo/demo-site-data.ts';
import { startAgent } from '../../src/services/agent/index.ts';
import type { TransportSubscription } from '../../src/transport/index.ts';
import { Federation, waitFor } from '../helpers/federation.ts';

describe('site agents with --site-config (real nats-server, image contract)', () => {
  let f: Federation;
  let dir: string;
  let siteConfigs: Map<string, string>;
  const heartbeats = new Map<string, number>();
  const subscriptions: TransportSubscription[] = [];

  beforeAll(async () => {
    f = await Federation.create('sitedata', {
      sites: 2,
      aggregators: 1,
      overrides: { data: mnistDataContract() },
    });
    dir = mkdtempSync(join(tmpdir(), 'cohort-site-data-agents-'));
    siteConfigs = writeDemoSiteData({
      dir,
      sites: f.dep.sites,
      trainLimit: 400,
      seed: 1,
      validationFraction: 0.25,
    });
    for (const site of f.dep.sites) {
      const sub = f.coord.transport.subscribe(f.coord.subjects.heartbeat(site), async () => {
        heartbeats.set(site, (heartbeats.get(site) ?? 0) + 1);
      });
      subscriptions.push(sub);
      await sub.ready();
    }
  });

  afterAll(async () => {
    await Promise.allSettled(subscriptions.map((s) => s.unsubscribe()));
    await f?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('a site whose images break the contract exits at start with the error and never joins', async () => {
    const images = join(dir, 'small-images-idx3-ubyte');
    writeIdx(images, [3, 32, 32], new Uint8Array(3 * 32 * 32));
    writeIdx(join(dir, 'small-labels-idx1-ubyte'), [3], Uint8Array.from([1, 2, 3]));
    const bad = join(dir, 'bad.site.yaml');
    writeFileSync(
      bad,
      'data:\n  idx: { images: small-images-idx3-ubyte, labels: small-labels-idx1-ubyte }\n',
    );
    const agent = f.spawn('agent', 'site-2', ['--site-config', bad]);
    const { code } = await agent.exited;
    expect(code, agent.output).toBe(2);
    expect(agent.output).toContain(
      `error [DATA_SHAPE]: ${images}, field "dimensions": images are 32×32, the contract says 28×28`,
    );
    expect(agent.events).toEqual([]); // not one log line: it never got as far as opening the member
  });

  it('a site whose files fit trains on its own rows, keeps its validation rows, and heartbeats', async () => {
    const siteConfig = loadSiteConfig(siteConfigs.get('site-1')!, { env: {} });
    const ctx = await f.member('site-1');
    const agent = await startAgent(ctx, { siteConfig });
    try {
      // 400 MNIST rows over 2 sites, a quarter of each held out for validation.
      expect(agent.stats().examples).toBe(150);
      await waitFor('a heartbeat of site-1', () => (heartbeats.get('site-1') ?? 0) > 0);
    } finally {
      await agent.stop();
    }
    expect(heartbeats.get('site-2') ?? 0).toBe(0);
  });

  it('startAgent refuses a site configuration whose files break the contract', async () => {
    const ctx = await f.member('site-2');
    const siteConfig = parseSiteConfig(
      { data: { idx: { images: 'small-images-idx3-ubyte', labels: 'small-labels-idx1-ubyte' } } },
      { file: join(dir, 'in-code.yaml') },
    );
    await expect(startAgent(ctx, { siteConfig })).rejects.toBeInstanceOf(DataError);
    expect(heartbeats.get('site-2') ?? 0).toBe(0);
  });
});
