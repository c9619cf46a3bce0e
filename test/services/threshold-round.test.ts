// Threshold CKKS end to end (issue 23): the real coordinator, aggregators and site agents over a
// real nats-server with `crypto.keys: threshold`. The ceremony makes no CKKS secret key: each site
// draws its own and deals shares of it. Every round's aggregate decrypts only with the decrypting
// set's share bundles, which the coordinator stores beside the aggregate but cannot open; a site
// that left is not asked; a site that catches up decrypts from the stored shares; the coordinator
// (and anyone without the data key) opens no bundle; a second request for another decrypting set
// at the same attempt is refused by every site's ledger.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ThresholdLaneContext } from '../../crypto/threshold/index.ts';
import { type ControlBodies, openControl, sealControl } from '../../src/protocol/index.ts';
import {
  decodeSharesObject,
  openShareBundle,
  shareContextOf,
  sharesObjectName,
} from '../../src/round/index.ts';
import { aggregateStore, readWriteOnceObject } from '../../src/services/store/index.ts';
import { e2eOverrides } from '../helpers/e2e-overrides.ts';
import { blockReason } from '../helpers/error-code.ts';
import { expectSingleChain, Federation, waitFor } from '../helpers/federation.ts';

const F = 'thresh';
const OVERRIDES = {
  ...e2eOverrides({ minContributors: 3 }),
  crypto: { keys: 'threshold' as const },
  log: { level: 'warn' as const },
};

/** Every file under `dir`, recursively. */
function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

describe('threshold CKKS rounds (real nats-server, real members)', () => {
  let f: Federation;

  beforeAll(async () => {
    f = await Federation.create(F, { aggregators: 2, sites: 4, overrides: OVERRIDES });
    for (const a of f.dep.aggregators) await f.startAggregator(a);
    for (const s of f.dep.sites) await f.startAgent(s);
  }, 120_000);
  afterAll(async () => {
    await f?.stop();
  });

  it('the ceremony makes no shared CKKS key: each site has its own threshold key file, the config pins the epoch', () => {
    const keys = f.dep.config.members!.keysDir;
    const all = files(keys);
    expect(all.some((p) => p.endsWith('.ckks.env'))).toBe(false);
    for (const s of f.dep.sites) {
      const own = join(keys, s, `${s}.threshold`);
      expect(all).toContain(own);
      expect(statSync(own).mode & 0o777).toBe(0o600);
      expect(all.some((p) => p.endsWith(`${s}.tsecret`))).toBe(false);
    }
    const epoch = JSON.parse(readFileSync(join(keys, 'public', 'threshold.epoch.json'), 'utf8'));
    expect(epoch.threshold).toBe(3); // ⌈2·4/3⌉
    expect(epoch.epochId).toBe(f.dep.config.members!.keyFingerprints!.threshold);
  });

  it('commits rounds decrypted from t sites’ shares; a site that left is not asked; it catches up from the stored shares', async () => {
    const first = await f.runCoordinator(1);
    expect(first.rounds.map((r) => [r.round, r.commit, r.contributors])).toEqual([[1, true, 4]]);
    const away = f.dep.sites[3]!;
    await f.agents.get(away)!.stop();
    f.agents.delete(away);
    const second = await f.runCoordinator(2);
    expect(second.rounds.map((r) => [r.round, r.commit, r.contributors])).toEqual([[2, true, 3]]);
    const decisions = await f.decisions();
    expectSingleChain(decisions, f.genesis);
    // Each commit's shares are stored beside its aggregate: the coordinator's request, then t bundles.
    const conn = f.coord.transport.connection;
    for (const d of decisions.filter((x) => x.commit)) {
      const stored = await readWriteOnceObject(conn, aggregateStore(F), sharesObjectName(d.round), {
        maxBytes: 64 * 1024 * 1024,
        timeoutMs: 5000,
      });
      const { request, bundles } = decodeSharesObject(stored!);
      const body = openControl(request, 'share-request', f.coord.keys).body;
      expect(body.decrypting.length).toBe(3);
      expect(bundles.length).toBe(3);
      if (d.round === 2) expect(body.decrypting.map((x) => x.site)).not.toContain(away);
    }
    // The site that left comes back and replays round 2 from the aggregate and the stored shares.
    const back = await f.startAgent(away);
    const heads = () => f.dep.sites.map((s) => f.storeHead(s)?.hash);
    await waitFor('the returning site at the head', () => new Set(heads()).size === 1, 60_000);
    expect(back.stats().replayed).toBe(1);
  }, 300_000);

  it('the coordinator stores bundles it cannot open: no data key, no shares', async () => {
    const d = (await f.decisions()).find((x) => x.commit)!;
    const stored = await readWriteOnceObject(
      f.coord.transport.connection,
      aggregateStore(F),
      sharesObjectName(d.round),
      { maxBytes: 64 * 1024 * 1024, timeoutMs: 5000 },
    );
    const { request, bundles } = decodeSharesObject(stored!);
    const body = openControl(request, 'share-request', f.coord.keys).body;
    const lanes = f.coord.ckks as ThresholdLaneContext;
    const site = body.decrypting[0]!.site;
    const open = (dataKey: Uint8Array) =>
      openShareBundle(bundles[0]!, {
        lanes,
        context: shareContextOf(body),
        site,
        key: f.coord.keys(site)!,
        dataKey,
      });
    // Sealed under a key derived from the data key, which the coordinator is never given (its
    // envelopes are sealed to the sites' ML-KEM keys): a guessed key does not open it.
    expect(blockReason(() => open(new Uint8Array(32)))).toBe('SHARES_INVALID');
  });

  it('a second share request for the same attempt with another decrypting set gets no shares', async () => {
    // Replay round 2's request with another set, signed by the coordinator itself: the sites'
    // ledgers refuse (two sets at one position would open a·S_x), so nobody answers.
    const d = (await f.decisions()).find((x) => x.round === 2)!;
    const stored = await readWriteOnceObject(
      f.coord.transport.connection,
      aggregateStore(F),
      sharesObjectName(d.round),
      { maxBytes: 64 * 1024 * 1024, timeoutMs: 5000 },
    );
    const body = openControl(decodeSharesObject(stored!).request, 'share-request', f.coord.keys).body;
    const epoch = JSON.parse(
      readFileSync(join(f.dep.config.members!.keysDir, 'public', 'threshold.epoch.json'), 'utf8'),
    ) as { sites: { id: string; point: number }[] };
    const other = epoch.sites.filter((s) => s.id !== body.decrypting[0]!.site).slice(0, 3);
    const forged: ControlBodies['share-request'] = {
      ...body,
      decrypting: other.map((s) => ({ site: s.id, point: s.point })),
    };
    const heard: string[] = [];
    const sub = f.coord.transport.subscribe(`cohort.${F}.share.*`, async (m) => {
      heard.push(m.subject);
      return new Uint8Array(0);
    });
    await sub.ready();
    await f.coord.transport.publish(
      f.coord.subjects.shareRequest,
      sealControl('share-request', forged, f.coord.member, f.coord.signing),
    );
    // Round 2 is decided: every site refuses it as a replay first; its ledger would refuse it too.
    await new Promise((r) => setTimeout(r, 1500));
    await sub.unsubscribe();
    expect(heard).toEqual([]);
  });
});
