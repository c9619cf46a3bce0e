// Threshold CKKS end to end (issue 23): the real coordinator, aggregators and site agents over a
// real nats-server with `crypto.keys: threshold`. The ceremony makes no CKKS secret key: each site
// draws its own and deals shares of it. Every round's aggregate decrypts only with the decrypting
// set's share bundles, which the coordinator stores beside the aggregate but cannot open; a site
// that left is not asked; a site that catches up decrypts from the stored shares; the coordinator
// (and anyone without the data key) opens no bundle; a second request for another decrypting set
// at the same attempt is refused by every site's ledger.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addInto,
  combineShares,
  commonRandomPoly,
  decryptionShare,
  loadThresholdKey,
  PositionLedger,
  roundDecryptionKey,
  type ThresholdKeyMaterial,
  type ThresholdLaneContext,
  unpackWords,
  wipeThresholdKey,
  zeroPoly,
} from '../../crypto/threshold/index.ts';
import type { AuditReport } from '../../src/audit/index.ts';
import {
  type ControlBodies,
  openControl,
  payloadPositionLabel,
  sealControl,
} from '../../src/protocol/index.ts';
import {
  decodeAggregateObject,
  makeShareBundle,
  openShareBundle,
  shareContextOf,
  verifyShareBundle,
} from '../../src/round/index.ts';
import { startAgent } from '../../src/services/agent/index.ts';
import { loadSiteDataKey, openMember } from '../../src/services/index.ts';
import { loadEpochDataKeys } from '../../src/services/site-threshold.ts';
import {
  colludeOnRound,
  laneLike,
  readStoredAggregate,
  storedShares as storedSharesOf,
  tapAggregatorWire,
} from '../helpers/collusion.ts';
import { e2eOverrides } from '../helpers/e2e-overrides.ts';
import { blockReason } from '../helpers/error-code.ts';
import { expectSingleChain, Federation, waitFor } from '../helpers/federation.ts';
import { auditExport, cohort } from '../helpers/run-cli.ts';

const F = 'thresh';
const OVERRIDES = {
  // A silent decrypter is waited for as long as a silent voter: short here.
  ...e2eOverrides({ minContributors: 3, voteTimeoutMs: 8000 }),
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

  /** An object of the aggregates store, read as the coordinator. */
  const readStored = (name: string) => readStoredAggregate(f, name);
  const storedShares = (round: number) => storedSharesOf(f, round);
  /** Update blocks captured as they went to the aggregators in round 1 (taps on the wire, no reply). */
  let wire: Awaited<ReturnType<typeof tapAggregatorWire>>;

  beforeAll(async () => {
    f = await Federation.create(F, { aggregators: 2, sites: 4, overrides: OVERRIDES });
    wire = await tapAggregatorWire(f, (round) => round === 1);
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
    for (const d of decisions.filter((x) => x.commit)) {
      const { body, bundles } = await storedShares(d.round);
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

  it('a contributor that dies after its upload is not asked for shares: the round commits with its update', async () => {
    // site-3 runs as a process that SIGKILLs itself once its whole update of round 3 is acknowledged.
    const dying = await f.agentProcessInstead('site-3', 'agent.update-sent@3');
    await waitFor('site-3 ready as a process', () => dying.output.includes('agent ready'), 60_000);
    const third = await f.runCoordinator(3);
    expect(third.rounds.map((r) => [r.round, r.commit, r.contributors])).toEqual([[3, true, 4]]);
    expect((await dying.exited).signal).toBe('SIGKILL');
    const d = (await f.decisions()).find((x) => x.round === 3)!;
    expect(d.aggregate!.contributors.map((c) => c.site)).toContain('site-3');
    const { body } = await storedShares(3);
    expect(body.decrypting.map((x) => x.site)).toEqual(['site-1', 'site-2', 'site-4']);
  }, 180_000);

  it('a decrypter that never answers fails its attempt and is struck; the next round commits without it', async () => {
    await f.startAgent('site-3');
    const silent = await f.agentProcessInstead('site-2', 'agent.share-request:skip');
    await waitFor('site-2 ready as a process', () => silent.output.includes('agent ready'), 60_000);
    await waitFor(
      'every site at the head',
      () => f.dep.sites.every((s) => f.storeHead(s)?.height === 3),
      60_000,
    );
    const summary = await f.runCoordinator(5);
    const [fourth, fifth] = summary.rounds;
    expect(fourth!.round).toBe(4);
    expect(fourth!.commit).toBe(false);
    expect(fourth!.reason).toMatch(/site-2 sent no decryption shares/);
    expect(fourth!.missing).toEqual(['site-2']);
    expect([fifth!.round, fifth!.commit]).toEqual([5, true]);
    const { body } = await storedShares(5);
    expect(body.decrypting.map((x) => x.site)).not.toContain('site-2');
  }, 180_000);

  it('one site with every aggregator and the coordinator reads no other site’s update captured on the wire', async () => {
    wire.stop();
    // The colluders: site-1 (its key file and the data key) and everyone who sees ciphertexts or
    // stores shares (the aggregators' wire, the coordinator's stores). With its own secret, as it
    // would under a shared key, and with the round's t shares, made for the aggregate of every
    // contributor, each victim's update stays masked; the same shares on the aggregate itself make
    // every slot a lane sum (the check can see success).
    const read = await colludeOnRound(f, { colluder: 'site-1', round: 1, tapped: wire.tapped });
    expect(read.blocks).toBeGreaterThan(0);
    expect(read.withOwnSecret).toBeLessThan(0.05);
    expect(read.withRoundShares).toBeLessThan(0.05);
    expect(read.aggregateWithShares).toBe(1);
  });

  it('the auditor verifies the log: every contribution re-added to its aggregate, nothing decrypted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-thresh-audit-'));
    try {
      const path = join(dir, 'audit.bin');
      await auditExport(f.dep.configPath, path);
      const r = await cohort('audit', 'verify', '--bundle', path, '--config', f.dep.configPath, '--json');
      const report = JSON.parse(r.stdout) as AuditReport;
      expect(report.problems).toEqual([]);
      expect(report.unchecked).toEqual([]);
      expect(report.checked.contributions).toBeGreaterThanOrEqual(7); // 4 in round 1, 3 in round 2
      expect(r.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the coordinator stores bundles it cannot open: no data key, no shares', async () => {
    const d = (await f.decisions()).find((x) => x.commit)!;
    const { body, bundles } = await storedShares(d.round);
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
    const { body } = await storedShares(d.round);
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
  it('a revocation re-shares the key epoch from a logged round; the revoked site’s share, with t − 1 others, decrypts nothing after it; past rounds stay replayable', async () => {
    // site-2 (the silent process) goes; the federation runs on with site-2 back in process.
    f.processes.get('site-2')!.child.kill('SIGKILL');
    await f.processes.get('site-2')!.exited;
    await f.startAgent('site-2');
    const decided: { round: number; commit: boolean }[] = [];
    const coordinator = f.startCoordinator({
      rounds: 100,
      switchWaitMs: 5000,
      onEvent: (e) => {
        if (e.type === 'decision') decided.push({ round: e.summary.round, commit: e.summary.commit });
      },
    });
    await waitFor('a commit', () => decided.some((d) => d.commit), 90_000);
    // site-4 made shares in rounds 3 and 5; it is revoked from the round after next.
    const from = coordinator.stats().round + 2;
    const run = await cohort(
      'registry',
      'revoke',
      '--config',
      f.dep.configPath,
      '--officer-key',
      f.dep.officer.key,
      '--member',
      'site-4',
      '--from-round',
      String(from),
      '--wait',
    );
    expect(run.status, run.stderr).toBe(0);
    await waitFor(
      `a commit from round ${from} on`,
      () => decided.some((d) => d.round >= from && d.commit),
      90_000,
    );
    await coordinator.stop();
    const made = (await f.decisions()).filter((d) => d.commit);
    // The re-sharing is a log record from round `from`: the three remaining sites, each one's
    // signed ready inside, a new epoch id that every later share request names.
    const epochs = (await f.logEntries()).flatMap((e) =>
      e.record.thresholdEpoch ? [e.record.thresholdEpoch] : [],
    );
    expect(epochs.map((e) => [e.fromRound, e.sites.map((x) => x.id)])).toEqual([
      [from, ['site-1', 'site-2', 'site-3']],
    ]);
    const reshared = epochs[0]!;
    expect(Buffer.from(reshared.epochId).toString('hex')).not.toBe(
      f.dep.config.members!.keyFingerprints!.threshold,
    );
    for (const d of made.filter((x) => x.round >= from)) {
      const { body } = await storedShares(d.round);
      expect(body.decrypting.map((x) => x.site)).not.toContain('site-4');
      expect(Buffer.from(body.epochId).equals(Buffer.from(reshared.epochId))).toBe(true);
    }
    // The sites of the new epoch erased their key files of the old one; site-4 (revoked) kept its.
    const keys = f.dep.config.members!.keysDir;
    const gen = reshared.generation;
    for (const s of ['site-1', 'site-2', 'site-3']) {
      expect(readdirSync(join(keys, s)).filter((n) => n.endsWith('.threshold'))).toEqual([
        `${s}.g${gen}.threshold`,
      ]);
    }
    // The revoked site-4 with t − 1 = 2 sites of the new epoch (their new key files) against the
    // first round after the revocation: a decrypting set {site-1, site-2, site-4}, each share made
    // as the protocol makes it for that set. Every slot is noise; the same with site-3's new key
    // instead of site-4's old one decrypts every slot (the check can see success).
    const tc = (f.coord.ckks as ThresholdLaneContext).tc;
    const after = made.find((x) => x.round >= from)!;
    const open = (await f.logEntries()).find(
      (e) =>
        e.record.roundOpen?.round === after.round &&
        Buffer.from(e.record.roundOpen.attempt).equals(Buffer.from(after.attempt)),
    )!.record.roundOpen!;
    const label = payloadPositionLabel({ federation: F, round: after.round, attempt: open.attempt });
    const contributors = after.aggregate!.contributors.map((c) => c.site);
    const material = (site: string, g: number) =>
      loadThresholdKey(tc, join(keys, site, g === 0 ? `${site}.threshold` : `${site}.g${g}.threshold`), F);
    const revoked = material('site-4', 0);
    const colluders = [material('site-1', gen), material('site-2', gen)];
    const honest = material('site-3', gen);
    const aggregate = decodeAggregateObject(await readStored(after.aggregate!.object));
    const pointOf = (m: ThresholdKeyMaterial) => m.roster.sites.find((x) => x.id === m.self)!.point;
    const decryptWith = (set: ThresholdKeyMaterial[], b: number) => {
      const points = set.map(pointOf);
      const crp = commonRandomPoly(tc, reshared.epochId, label, b);
      const shares = set.map((m) => {
        const sum = zeroPoly(tc);
        // A site of the old epoch holds no share of a new secret: its best guess is the old ones.
        for (const c of contributors) if (m.shares.has(c)) addInto(tc, sum, m.shares.get(c)!);
        return decryptionShare(tc, roundDecryptionKey(tc, sum, points, pointOf(m)), crp);
      });
      return laneLike(combineShares(tc, unpackWords(tc, aggregate[b]!), shares));
    };
    for (let b = 0; b < Math.min(aggregate.length, 3); b++) {
      expect(decryptWith([...colluders, revoked], b)).toBeLessThan(0.05);
      expect(decryptWith([...colluders, honest], b)).toBe(1);
    }
    // Nor can it read the round's stored shares: they are sealed under the new epoch's data key,
    // which its federation data key (data.env, still in its hands) does not give.
    const { body: afterBody, bundles: afterBundles } = await storedShares(after.round);
    const ctxAfter = shareContextOf(afterBody);
    const site = afterBody.decrypting[0]!.site;
    const lanesNow = f.coord.ckks as ThresholdLaneContext;
    const openWith = (dataKey: Uint8Array) =>
      openShareBundle(afterBundles[0]!, {
        lanes: lanesNow,
        context: ctxAfter,
        site,
        key: f.coord.keys(site)!,
        dataKey,
      });
    const oldKey = loadSiteDataKey(keys, 'site-4', F);
    expect(() => openWith(oldKey)).toThrow();
    const epochKey = loadEpochDataKeys(keys, 'site-1').get(Buffer.from(reshared.epochId).toString('hex'))!;
    expect(openWith(epochKey).length).toBeGreaterThan(0);
    oldKey.fill(0);
    for (const m of [revoked, honest, ...colluders]) wipeThresholdKey(m);
    // site-1 rebuilds its store from the log in a fresh folder: every commit replayed, the rounds
    // whose shares site-4 signed included (checked with the key it held then).
    await f.agents.get('site-1')!.stop();
    f.agents.delete('site-1');
    const fresh = mkdtempSync(join(tmpdir(), 'cohort-thresh-rebuild-'));
    try {
      const ctx = await openMember(
        { ...f.dep.config, paths: { ...f.dep.config.paths, dataDir: fresh } },
        'site-1',
      );
      const agent = await startAgent(ctx, {});
      try {
        const top = made.at(-1)!;
        await waitFor('site-1 rebuilt to the head', () => agent.stats().replayed >= made.length, 90_000);
        expect(agent.stats().replayed).toBe(made.length);
        expect(made.some((d) => d.round === 3 || d.round === 5)).toBe(true);
        expect(top.commit).toBe(true);
      } finally {
        await agent.stop();
        await ctx.close();
      }
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  }, 300_000);
  it('a coordinator that shows a site another context than the stored request gets no shares for it', async () => {
    // While a round collects shares, the coordinator's key also signs a second request for the same
    // attempt: a phantom cohort (site-1 beside two others, not the sites the log's partials list)
    // and another decrypting set. Every site answers only the request stored write-once for the
    // round, so the bundles on the wire are all for the stored context.
    const keys = f.dep.config.members!.keysDir;
    const epoch = JSON.parse(readFileSync(join(keys, 'public', 'threshold.epoch.json'), 'utf8')) as {
      sites: { id: string; point: number }[];
    };
    // site-1 back (site-4 is revoked): three sites, the threshold.
    await f.startAgent('site-1');
    const listen = (await f.member('site-2')).transport.connection;
    const tapWire = (await f.member('coordinator')).transport.connection;
    // Bundles travel in chunks (Cohort-Id, Cohort-Chunk `i/n`): reassembled here by message id.
    const chunks = new Map<string, { site: string; parts: Uint8Array[]; count: number }>();
    let closed = false;
    let real: ControlBodies['share-request'] | undefined;
    const bundles = tapWire.subscribe(`cohort.${F}.share.*`, {
      callback: (_err, m) => {
        if (closed) return; // a later round's bundles
        const id = m.headers?.get('Cohort-Id') ?? `${Math.random()}`;
        const [index, count] = (m.headers?.get('Cohort-Chunk') ?? '0/1').split('/').map(Number);
        const entry = chunks.get(id) ?? { site: m.subject.split('.').at(-1)!, parts: [], count: count! };
        entry.parts[index!] = m.data.slice();
        chunks.set(id, entry);
      },
    });
    const requests = listen.subscribe(f.coord.subjects.shareRequest, {
      callback: (_err, m) => {
        if (real !== undefined) return;
        const body = openControl(m.data, 'share-request', f.coord.keys).body;
        real = body;
        const others = body.contributors.filter((x) => x !== 'site-1').slice(0, 2);
        const forged: ControlBodies['share-request'] = {
          ...body,
          contributors: ['site-1', ...others].sort(),
          decrypting: epoch.sites
            .filter((x) => x.id !== body.decrypting.at(-1)!.site)
            .slice(0, body.decrypting.length)
            .map((x) => ({ site: x.id, point: x.point })),
        };
        void f.coord.transport.publish(
          f.coord.subjects.shareRequest,
          sealControl('share-request', forged, f.coord.member, f.coord.signing),
        );
      },
    });
    const refusedBefore = [...f.agents.values()].reduce((a, agent) => a + agent.stats().replaysRefused, 0);
    // The coordinator stopped in the test before may have left a round open: its successor aborts
    // it first, so run two round numbers on.
    const last = (await f.decisions()).at(-1)!.round;
    const summary = await f.runCoordinator(last + 2, (e) => {
      if (e.type === 'decision' && e.summary.round === real?.round) closed = true;
    });
    requests.unsubscribe();
    bundles.unsubscribe();
    expect(real).toBeDefined();
    expect(summary.rounds.some((r) => r.round === real!.round && r.commit)).toBe(true);
    // Every bundle on the wire is for the stored request's context; none for the forged one.
    const lanes = f.coord.ckks as ThresholdLaneContext;
    const context = shareContextOf(real!);
    const seen = [...chunks.values()]
      .filter((c) => c.parts.filter((p) => p !== undefined).length === c.count)
      .map((c) => ({ site: c.site, bytes: new Uint8Array(Buffer.concat(c.parts)) }));
    expect(seen.length).toBeGreaterThanOrEqual(real!.decrypting.length);
    for (const b of seen) {
      expect(() =>
        verifyShareBundle(b.bytes, { lanes, context, site: b.site, key: f.coord.keys(b.site)! }),
      ).not.toThrow();
    }
    const refused = [...f.agents.values()].reduce((a, agent) => a + agent.stats().replaysRefused, 0);
    expect(refused).toBeGreaterThan(refusedBefore);
  }, 120_000);

  it('a decrypter whose signed shares do not open is named SHARES_INVALID by the voters and struck; they are not', async () => {
    // site-2's credentials hand in a bundle that is validly signed for the round's context (the
    // coordinator, which cannot open bundles, accepts it) but sealed under a key other than the data
    // key. site-2 itself runs as a process that never answers, so this bundle is the only one of
    // site-2. t = 3 of the epoch's three sites: site-2 is in every decrypting set.
    const garbler = await f.agentProcessInstead('site-2', 'agent.share-request:skip');
    const hostile = await f.member('site-2');
    const keys = f.dep.config.members!.keysDir;
    const own = readdirSync(join(keys, 'site-2')).find((n) => /\.g\d+\.threshold$/.test(n))!;
    const lanes = f.coord.ckks as ThresholdLaneContext;
    const material = loadThresholdKey(lanes.tc, join(keys, 'site-2', own), F);
    const scratch = mkdtempSync(join(tmpdir(), 'cohort-garble-'));
    const ledger = PositionLedger.open(scratch);
    let garbled: Promise<void> | undefined;
    const listen = hostile.transport.subscribe(hostile.subjects.shareRequest, async (m) => {
      const body = openControl(m.data, 'share-request', hostile.keys, { signer: f.dep.coordinator }).body;
      if (garbled !== undefined || !body.decrypting.some((d) => d.site === 'site-2')) return undefined;
      const bundle = makeShareBundle({
        lanes,
        context: shareContextOf(body),
        material,
        signer: { id: 'site-2', key: hostile.signing },
        dataKey: new Uint8Array(32).fill(9),
        ledger,
      });
      garbled = hostile.transport.request(hostile.subjects.share('site-2'), bundle).then(() => undefined);
      return undefined;
    });
    await listen.ready();
    try {
      await waitFor('site-2 ready as a process', () => garbler.output.includes('agent ready'), 60_000);
      const decided: { round: number; commit: boolean }[] = [];
      const coordinator = f.startCoordinator({
        rounds: 1000,
        switchWaitMs: 5000,
        onEvent: (e) => {
          if (e.type === 'decision') decided.push({ round: e.summary.round, commit: e.summary.commit });
        },
      });
      await waitFor('the garbled bundle sent', () => garbled !== undefined, 90_000);
      await garbled;
      await waitFor('its round decided', () => decided.length > 0, 90_000);
      await coordinator.stop();
      const d = (await f.decisions()).find((x) => x.round === decided[0]!.round)!;
      expect(d.commit).toBe(false);
      expect(d.culprits.map((c) => [c.member, c.fault])).toEqual([['site-2', 'SHARES_INVALID']]);
      // The voters that said so are excused: none of them is struck for its NO in this round.
      expect(d.exclusions.filter((x) => x.sinceRound === d.round).map((x) => x.site)).toEqual(['site-2']);
    } finally {
      await listen.unsubscribe();
      ledger.close();
      wipeThresholdKey(material);
      rmSync(scratch, { recursive: true, force: true });
      garbler.child.kill('SIGKILL');
      await garbler.exited;
    }
  }, 180_000);
});
