// A round's decryption shares as sites make and readers open them: sealed, signed, bound to the
// round attempt, aggregate, cohort and decrypting set, one bundle per attempt per site whatever is
// asked (kept across restarts), never for fewer than round.minContributors. t bundles decode the
// exact lane sums with the aggregate MAC checked.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CKKS_PARAMS, PlainLaneContext, PlainLaneKeyset } from '../../crypto/ckks/index.ts';
import { AggregateMacKey } from '../../crypto/mac/index.ts';
import { generateSigningKeyPair, type SigningKeyPair } from '../../crypto/signature/index.ts';
import {
  DEFAULT_THRESHOLD_PARAMS,
  getThresholdContext,
  PositionLedger,
  type RnsPoly,
  SiteSecret,
  type ThresholdKeyMaterial,
  ThresholdLaneContext,
  ThresholdLaneKeyset,
  type ThresholdRoster,
  thresholdParamsId,
} from '../../crypto/threshold/index.ts';
import {
  BlockVerifier,
  DEFAULT_CODEC_OPTIONS,
  decodeAggregate,
  encodeUpdate,
  sumUpdates,
  type VerifiedUpdate,
} from '../../src/protocol/index.ts';
import {
  makeShareBundle,
  makeShareBundleYielding,
  openShareBundle,
  type ShareContext,
  sharesDecryptor,
} from '../../src/round/index.ts';
import {
  addPlaintext,
  randomUpdate,
  roundContext,
  roundMac,
  sumCiphertexts,
} from '../helpers/codec-fixture.ts';
import { blockReason } from '../helpers/error-code.ts';

const IDS = ['site-1', 'site-2', 'site-3', 'site-4'];
const THRESHOLD = 3;
const PARAMS = 9_000;
const ATTEMPT = Uint8Array.of(4, 2);
const EPOCH = new Uint8Array(32).fill(5);

let lanes: ThresholdLaneContext;
let dir: string;
let macKey: AggregateMacKey;
const dataKey = new Uint8Array(32).fill(3);
const round = roundContext(11);
const mac = () => roundMac(macKey, round, ATTEMPT);
const signers = new Map<string, SigningKeyPair>();
const material = new Map<string, ThresholdKeyMaterial>();
let roster: ThresholdRoster;
let updates: VerifiedUpdate[];
let reference: ReturnType<typeof decodeAggregate>;
let digest: Uint8Array;

const ledger = (site: string) => PositionLedger.open(join(dir, site));

function context(over: Partial<ShareContext> = {}): ShareContext {
  return {
    federation: round.federation,
    round: round.round,
    attempt: ATTEMPT,
    epochId: EPOCH,
    aggregateDigest: digest,
    blocks: updates[0]!.ciphertexts.length,
    contributors: IDS,
    decrypting: ['site-1', 'site-2', 'site-4'].map((site) => ({ site, point: point(site) })),
    minContributors: 3,
    ...over,
  };
}

function point(site: string): number {
  return roster.sites.find((s) => s.id === site)!.point;
}

function bundle(site: string, ctx: ShareContext, l = ledger(site)): Uint8Array {
  try {
    return makeShareBundle({
      lanes,
      context: ctx,
      material: material.get(site)!,
      signer: { id: site, key: signers.get(site)! },
      dataKey,
      ledger: l,
    });
  } finally {
    l.close();
  }
}

function open(site: string, bytes: Uint8Array, ctx: ShareContext, key = dataKey): RnsPoly[] {
  return openShareBundle(bytes, {
    lanes,
    context: ctx,
    site,
    key: signers.get(site)!,
    dataKey: key,
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cohort-shares-'));
  lanes = new ThresholdLaneContext(await getThresholdContext(DEFAULT_THRESHOLD_PARAMS));
  macKey = AggregateMacKey.random();
  roster = {
    federation: round.federation,
    paramsId: thresholdParamsId(DEFAULT_THRESHOLD_PARAMS),
    threshold: THRESHOLD,
    generation: 0,
    sites: IDS.map((id, k) => ({ id, point: 10 + 3 * k })),
  };
  const secrets = new Map(IDS.map((id) => [id, SiteSecret.generate(lanes.tc)]));
  const held = new Map(IDS.map((id) => [id, new Map<string, RnsPoly>()]));
  for (const [dealer, s] of secrets) {
    s.deal(
      THRESHOLD,
      roster.sites.map((x) => x.point),
    ).forEach((share, k) => {
      held.get(IDS[k]!)!.set(dealer, share);
    });
  }
  for (const id of IDS) {
    signers.set(id, generateSigningKeyPair('falcon-512'));
    material.set(id, {
      roster,
      epochId: EPOCH,
      self: id,
      secret: secrets.get(id)!.exportWords(),
      shares: held.get(id)!,
    });
  }
  const keys = (s: string) => signers.get(s);
  const encode = (id: string, keyset: ThresholdLaneKeyset | PlainLaneKeyset, seed: number) =>
    encodeUpdate({
      update: randomUpdate(PARAMS, seed, 0.05),
      residual: null,
      credentials: { signer: id, ckks: keyset, signing: signers.get(id)!, mac: mac() },
      context: round,
      options: DEFAULT_CODEC_OPTIONS,
      exampleWeight: 10,
      roundingSeed: { key0: seed, key1: 1 },
    });
  const verify = (paramsId: Uint8Array) =>
    new BlockVerifier({ context: round, ckksParamsId: paramsId, keys, allowedAlgorithms: ['falcon-512'] });
  updates = IDS.map((id, k) =>
    verify(lanes.paramsId).verifyUpdate(
      encode(id, new ThresholdLaneKeyset(lanes, secrets.get(id)!, EPOCH, ledger(id)), 50 + k),
    ),
  );
  const plain = new PlainLaneContext(DEFAULT_CKKS_PARAMS);
  reference = decodeAggregate(
    new PlainLaneKeyset(plain),
    sumUpdates(
      plain,
      IDS.map((id, k) => verify(plain.paramsId).verifyUpdate(encode(id, new PlainLaneKeyset(plain), 50 + k))),
    ),
    mac(),
  );
  digest = new Uint8Array(32).fill(0xd1);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('decryption share bundles', () => {
  it('t sites’ bundles, opened by a reader, decode the exact lane sums with the MAC checked', () => {
    const ctx = context();
    const opened = new Map(ctx.decrypting.map((d) => [d.site, open(d.site, bundle(d.site, ctx), ctx)]));
    const decryptor = sharesDecryptor(lanes, ctx, opened);
    const decoded = decodeAggregate(decryptor, sumUpdates(lanes, updates), mac());
    decryptor.delete();
    expect(decoded.contributors).toBe(4);
    expect(decoded.clamped).toBe(0);
    expect(decoded.laneSums).toEqual(reference.laneSums);
  });

  it('an aggregate that is not its listed sum (one site’s update listed as all, doubled, or plus a plaintext) decrypts to noise', () => {
    // A share depends on the listed contributors and the position, never on the aggregate's bytes:
    // it removes a·Σ s_i over the cohort from whatever c0 it is combined with. One site's c0 alone
    // keeps a·s_i of every other listed site: uniform noise, not that site's update. Whoever holds
    // every contribution (an aggregator) learns from the shares only what the honest sum shows.
    const ctx = context();
    const opened = new Map(ctx.decrypting.map((d) => [d.site, open(d.site, bundle(d.site, ctx), ctx)]));
    const decryptor = sharesDecryptor(lanes, ctx, opened);
    const bound = 2 ** (lanes.params.exactBits + 2);
    const noisy = (payload: Uint8Array) => {
      const slots = decryptor.decrypt(payload, 0);
      return slots.filter((v) => !(Math.abs(v) < bound)).length / slots.length;
    };
    const alone = updates[0]!.ciphertexts[0]!;
    const doubled = sumCiphertexts(lanes, [updates[0]!, updates[0]!])[0]!;
    const shifted = addPlaintext(lanes, alone, new Float64Array(lanes.slots).fill(12_345));
    const honest = sumCiphertexts(lanes, updates)[0]!;
    try {
      // Uniform coefficients mod q decode to slots of about √N · q / (2Δ) ≈ 2^49: a few land below
      // the bound by chance; an honest sum never leaves it.
      for (const lie of [alone, doubled, shifted]) expect(noisy(lie)).toBeGreaterThan(0.9);
      expect(noisy(honest)).toBe(0);
    } finally {
      decryptor.delete();
    }
  });

  it('one bundle per attempt: the same context gets the same bytes, after a restart too; another set or cohort is refused', () => {
    const ctx = context();
    const first = bundle('site-2', ctx);
    // A restarted site (a new ledger object on the same folder) hands back the very same bundle:
    // fresh shares would carry fresh flooding noise, and averaging thins it.
    expect(Buffer.from(bundle('site-2', ctx)).equals(Buffer.from(first))).toBe(true);
    // Shares for two decrypting sets at one position let a lattice reduction recover a·S_x.
    const otherSet = context({
      decrypting: ['site-1', 'site-2', 'site-3'].map((site) => ({ site, point: point(site) })),
    });
    expect(() => bundle('site-2', otherSet)).toThrow(/another cohort, decrypting set or aggregate/);
    // Shares for C and C \ {k} differ by a share of a·s_k.
    const fewer = context({ contributors: ['site-1', 'site-2', 'site-3'] });
    expect(() => bundle('site-2', fewer)).toThrow(
      expect.objectContaining({ code: 'SHARES_CONTEXT_CHANGED' }),
    );
    // Another aggregate presented for the same attempt: refused as well.
    expect(() => bundle('site-2', context({ aggregateDigest: new Uint8Array(32) }))).toThrow(
      expect.objectContaining({ code: 'SHARES_CONTEXT_CHANGED' }),
    );
    // A new attempt is a new position: shares are made.
    const next = context({ attempt: Uint8Array.of(4, 3) });
    expect(bundle('site-2', next).length).toBeGreaterThan(0);
  });

  it('made while the event loop runs: the same bundle rules, concurrent asks share one bundle, another context is refused', async () => {
    const ctx = context({ attempt: Uint8Array.of(7, 7) });
    const l = ledger('site-4');
    const input = (c: ShareContext) => ({
      lanes,
      context: c,
      material: material.get('site-4')!,
      signer: { id: 'site-4', key: signers.get('site-4')! },
      dataKey,
      ledger: l,
    });
    try {
      const first = makeShareBundleYielding(input(ctx));
      // While it is being made, a second ask for the context waits for the same bundle; another
      // context at the position is refused before any share is made; a synchronous ask is too.
      const again = makeShareBundleYielding(input(ctx));
      const otherSet = context({
        attempt: ctx.attempt,
        decrypting: ['site-1', 'site-3', 'site-4'].map((site) => ({ site, point: point(site) })),
      });
      expect(() => makeShareBundle(input(ctx))).toThrow(
        expect.objectContaining({ code: 'SHARES_IN_PROGRESS' }),
      );
      await expect(makeShareBundleYielding(input(otherSet))).rejects.toMatchObject({
        code: 'SHARES_CONTEXT_CHANGED',
      });
      const [a, b] = await Promise.all([first, again]);
      expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
      expect(open('site-4', a, ctx).length).toBe(ctx.blocks);
      // Once made, the synchronous path hands back the same bytes too.
      expect(Buffer.from(makeShareBundle(input(ctx))).equals(Buffer.from(a))).toBe(true);
    } finally {
      l.close();
    }
  });

  it('no shares for fewer contributors than round.minContributors, a set short of t, or a point the roster does not give', () => {
    const a = Uint8Array.of(9, 1);
    expect(() => bundle('site-1', context({ attempt: a, contributors: ['site-1', 'site-2'] }))).toThrow(
      /round.minContributors is 3/,
    );
    expect(() =>
      bundle(
        'site-1',
        context({
          attempt: a,
          decrypting: [
            { site: 'site-1', point: point('site-1') },
            { site: 'site-2', point: point('site-2') },
          ],
        }),
      ),
    ).toThrow(/short of the threshold 3/);
    expect(() =>
      bundle(
        'site-1',
        context({
          attempt: a,
          decrypting: [
            { site: 'site-1', point: point('site-1') },
            { site: 'site-2', point: 99 },
            { site: 'site-3', point: point('site-3') },
          ],
        }),
      ),
    ).toThrow(/the roster gives site-2 point/);
    // Under a committee that leaves site-4 out, a set that counts it toward t is refused.
    const m = material.get('site-1')!;
    const committee = { ...m, roster: { ...m.roster, holders: ['site-1', 'site-2', 'site-3'] } };
    const l = ledger('site-1');
    try {
      expect(() =>
        makeShareBundle({
          lanes,
          context: context({ attempt: a }),
          material: committee,
          signer: { id: 'site-1', key: signers.get('site-1')! },
          dataKey,
          ledger: l,
        }),
      ).toThrow(/site-4 holds no shares in the epoch/);
    } finally {
      l.close();
    }
    // None of these refusals claimed the position: the proper context still gets its shares.
    expect(bundle('site-1', context({ attempt: a })).length).toBeGreaterThan(0);
  });

  it('a reader refuses a bundle for another context, from another site, altered, or sealed under another data key', () => {
    const a = Uint8Array.of(9, 2);
    const ctx = context({ attempt: a });
    const good = bundle('site-4', ctx);
    expect(open('site-4', good, ctx).length).toBe(ctx.blocks);
    const refused = (f: () => unknown) => expect(blockReason(f)).toBe('SHARES_INVALID');
    refused(() => open('site-4', good, context({ attempt: a, aggregateDigest: new Uint8Array(32) })));
    refused(() => open('site-1', good, ctx));
    refused(() => open('site-4', good.subarray(0, good.length - 1), ctx));
    const flipped = good.slice();
    flipped[flipped.length - 700]! ^= 1;
    refused(() => open('site-4', flipped, ctx));
    refused(() => open('site-4', good, ctx, new Uint8Array(32).fill(4)));
    refused(() => open('site-3', good, ctx));
  });

  it('a restarted site does not encrypt twice at one position: the ledger remembers it', () => {
    const secret = SiteSecret.generate(lanes.tc);
    const values = new Float64Array(lanes.slots).fill(1);
    const position = { label: 'update:test-fed:12:0102', index: 0 };
    new ThresholdLaneKeyset(lanes, secret, EPOCH, ledger('restart')).encrypt(values, position);
    const again = new ThresholdLaneKeyset(lanes, secret, EPOCH, ledger('restart'));
    expect(() => again.encrypt(values, position)).toThrow(
      expect.objectContaining({ code: 'POSITION_REUSED' }),
    );
    expect(again.encrypt(values, { ...position, index: 1 }).length).toBe(lanes.maxCiphertextBytes);
  });

  it('a torn last record (a crash mid-append) is dropped; whole records stay; the file is owner-only', () => {
    const l = ledger('torn');
    l.claimEncryption(EPOCH, 'update:x:1:00', 0);
    l.close();
    const file = join(dir, 'torn', 'claims.log');
    writeFileSync(file, Buffer.concat([readFileSync(file), Buffer.alloc(20, 7)]));
    const reopened = ledger('torn');
    expect(reopened.size).toBe(1);
    expect(() => reopened.claimEncryption(EPOCH, 'update:x:1:00', 0)).toThrow(/already encrypted/);
    reopened.claimEncryption(EPOCH, 'update:x:1:00', 1);
    reopened.close();
    expect(readFileSync(file).length).toBe(2 * 65);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });
});
