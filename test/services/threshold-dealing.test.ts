// The threshold key ceremony on real keys: every site deals its secret in Shamir shares sealed to
// the others' ML-KEM keys, collects the shares dealt to it, and ends with a key file holding its own
// secret and one share of every site's. Any t key files decrypt; no file anywhere holds the key
// that no one should hold, nor any site's secret outside its own folder.
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CKKS_PARAMS, getCkksContext } from '../../crypto/ckks/index.ts';
import { sealEnvelope } from '../../crypto/kem/index.ts';
import { loadSigningKeyPair } from '../../crypto/signature/index.ts';
import {
  addInto,
  assertRoster,
  combineShares,
  commonRandomPoly,
  DEFAULT_THRESHOLD_PARAMS,
  decryptionShare,
  epochSeed,
  getThresholdContext,
  loadThresholdKey,
  roundDecryptionKey,
  SiteSecret,
  type ThresholdContext,
  type ThresholdKeyMaterial,
  type ThresholdRoster,
  thresholdParamsId,
  zeroPoly,
} from '../../crypto/threshold/index.ts';
import { loadRegistry, RegistryView } from '../../src/registry/index.ts';
import { runKeyCeremony } from '../../src/services/key-ceremony.ts';
import {
  type CollectedEpoch,
  collectThresholdShares,
  dealThresholdShares,
  holdersProblem,
  sharePurpose,
  thresholdFiles,
  thresholdRosterOf,
} from '../../src/services/threshold-dealing.ts';
import { errorCode } from '../helpers/error-code.ts';

const FED = 'threshold-fed';
const SITES = ['site-a', 'site-b', 'site-c', 'site-d'];
const root = mkdtempSync(join(tmpdir(), 'cohort-threshold-'));
const dir = join(root, 'keys');
let ctx: ThresholdContext;
let roster: ThresholdRoster;
let registry: RegistryView;
let collected: Map<string, CollectedEpoch>;
let keys: Map<string, ThresholdKeyMaterial>;
const fingerprints = new Map<string, string>();

afterAll(() => rmSync(root, { recursive: true, force: true }));

beforeAll(async () => {
  ctx = await getThresholdContext(DEFAULT_THRESHOLD_PARAMS);
  const ceremony = runKeyCeremony({
    dir,
    federation: FED,
    coordinator: 'coordinator',
    aggregators: ['agg-1'],
    sites: SITES,
    algorithm: 'falcon-512',
    ckks: await getCkksContext(DEFAULT_CKKS_PARAMS),
  });
  registry = RegistryView.fromRegistry(
    loadRegistry(ceremony.registry.path, ceremony.registry.sha256).registry,
  );
  roster = {
    federation: FED,
    paramsId: thresholdParamsId(DEFAULT_THRESHOLD_PARAMS),
    threshold: 3,
    generation: 0,
    sites: SITES.map((id, k) => ({ id, point: k + 1 })),
  };
  for (const site of SITES) {
    const signingKey = loadSigningKeyPair(join(dir, site, `${site}.key`));
    fingerprints.set(
      site,
      dealThresholdShares({
        dir,
        site,
        roster,
        ctx,
        signingKey,
        kemKeys: (id) => registry.currentKemKey(id),
      }),
    );
  }
  collected = new Map(
    SITES.map((site) => [site, collectThresholdShares({ dir, site, roster, ctx, registry })]),
  );
  keys = new Map(SITES.map((site) => [site, loadThresholdKey(ctx, collected.get(site)!.keyFile, FED)]));
});

/**
 * Every site encrypts the same slots (k mod 1000) at one position; the `decrypting` sites of
 * `r` combine their decryption shares of that sum. Returns the decoded slots.
 */
function encryptAllThenDecrypt(
  r: ThresholdRoster,
  material: ReadonlyMap<string, ThresholdKeyMaterial>,
  decrypting: readonly string[],
): Float64Array {
  const crp = commonRandomPoly(ctx, material.get(SITES[0]!)!.epochId, 'round:1', 0);
  const values = Float64Array.from({ length: ctx.slots }, (_, k) => k % 1000);
  const c0 = zeroPoly(ctx);
  for (const site of SITES)
    addInto(ctx, c0, SiteSecret.fromWords(ctx, material.get(site)!.secret).encrypt(values, crp));
  const points = decrypting.map((s) => r.sites.find((x) => x.id === s)!.point);
  const shares = decrypting.map((s, k) => {
    const sum = zeroPoly(ctx);
    for (const dealer of SITES) addInto(ctx, sum, material.get(s)!.shares.get(dealer)!);
    return decryptionShare(ctx, roundDecryptionKey(ctx, sum, points, points[k]!), crp);
  });
  return combineShares(ctx, c0, shares);
}

/** Every file under the ceremony folder, with its bytes. */
function everyFile(): Map<string, Uint8Array> {
  const out = new Map<string, Uint8Array>();
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.set(p, readFileSync(p));
    }
  };
  walk(root);
  return out;
}

function contains(hay: Uint8Array, needle: Uint8Array): boolean {
  return Buffer.from(hay).indexOf(Buffer.from(needle)) >= 0;
}

describe('threshold dealing', () => {
  it('every site agrees on the epoch id and on every public share fingerprint', () => {
    const ids = new Set([...collected.values()].map((c) => Buffer.from(c.epochId).toString('hex')));
    expect(ids.size).toBe(1);
    for (const c of collected.values()) {
      expect(c.publicShares.map((p) => p.fingerprint)).toEqual(SITES.map((s) => fingerprints.get(s)));
    }
    for (const k of keys.values()) expect(k.epochId).toEqual(collected.get('site-a')!.epochId);
  });

  it('key files are owner-only, and the pending secrets are gone', () => {
    for (const site of SITES) {
      expect(statSync(collected.get(site)!.keyFile).mode & 0o777).toBe(0o600);
      expect(() => statSync(join(dir, site, thresholdFiles.pendingSecret(site)))).toThrow();
    }
  });

  it('any t key files decrypt the sum of the sites’ ciphertexts; each site encrypts under its own secret', () => {
    for (const decrypting of [
      ['site-a', 'site-b', 'site-c'],
      ['site-b', 'site-c', 'site-d'],
    ]) {
      const got = encryptAllThenDecrypt(roster, keys, decrypting);
      for (let k = 0; k < 100; k++) expect(Math.round(got[k]!) + 0).toBe(4 * (k % 1000));
    }
  });

  it('no file holds the sum of the secrets, nor a site’s secret outside its own folder', () => {
    const sum = zeroPoly(ctx);
    for (const k of keys.values()) addInto(ctx, sum, k.secret);
    const sumBytes = new Uint8Array(sum.buffer).subarray(0, 64);
    const files = everyFile();
    for (const [path, bytes] of files) expect(contains(bytes, sumBytes), path).toBe(false);
    for (const site of SITES) {
      const own = new Uint8Array(keys.get(site)!.secret.buffer).subarray(0, 64);
      for (const [path, bytes] of files) {
        if (!path.startsWith(`${join(dir, site)}/`))
          expect(contains(bytes, own), `${site}'s secret in ${path}`).toBe(false);
      }
    }
  });

  it('a share sealed by another site than its dealer is refused, naming the maker', () => {
    const forgedDir = join(root, 'forged', 'keys');
    cpSync(dir, forgedDir, { recursive: true });
    // site-b seals, to site-c, a "share of site-a's secret".
    const forged = sealEnvelope(
      { id: 'site-b', key: loadSigningKeyPair(join(dir, 'site-b', 'site-b.key')) },
      registry.currentKemKey('site-c')!,
      new Uint8Array(ctx.polyBytes),
      { federation: FED, recipient: 'site-c', purpose: sharePurpose(roster, 'site-a') },
    );
    writeFileSync(join(forgedDir, 'public', thresholdFiles.share('site-a', 'site-c')), forged);
    // site-c collects again, with its pending secret put back.
    const pending = new Uint8Array(32 + ctx.polyBytes);
    pending.set(epochSeed(roster), 0);
    pending.set(new Uint8Array(keys.get('site-c')!.secret.buffer), 32);
    writeFileSync(join(forgedDir, 'site-c', thresholdFiles.pendingSecret('site-c')), pending, {
      mode: 0o600,
    });
    expect(
      errorCode(() => collectThresholdShares({ dir: forgedDir, site: 'site-c', roster, ctx, registry })),
    ).toBe('ENVELOPE_MAKER_REFUSED');
  });

  it('a public share re-signed by nobody, or for another roster, is refused', () => {
    const path = join(dir, 'public', thresholdFiles.publicShare('site-d'));
    const good = readFileSync(path);
    const bad = Buffer.from(good);
    bad[100] = bad[100]! ^ 1;
    writeFileSync(path, bad);
    try {
      expect(errorCode(() => collectThresholdShares({ dir, site: 'site-a', roster, ctx, registry }))).toBe(
        'PUBLIC_SHARE_INVALID',
      );
      expect(
        errorCode(() =>
          collectThresholdShares({ dir, site: 'site-a', roster: { ...roster, threshold: 2 }, ctx, registry }),
        ),
      ).toBe('PUBLIC_SHARE_INVALID');
    } finally {
      writeFileSync(path, good);
    }
  });
});

describe('a decryption committee: every site deals only to the key holders', () => {
  const HOLDERS = ['site-a', 'site-c'];
  const committeeDir = join(root, 'committee', 'keys');
  let committee: ThresholdRoster;
  let held: Map<string, ThresholdKeyMaterial>;

  beforeAll(() => {
    cpSync(dir, committeeDir, { recursive: true });
    // The first ceremony's files out of the way: this one writes its own.
    for (const f of readdirSync(join(committeeDir, 'public'))) {
      if (f.endsWith('.tshare.env') || f.endsWith('.tpub')) rmSync(join(committeeDir, 'public', f));
    }
    committee = thresholdRosterOf({
      federation: FED,
      paramsId: thresholdParamsId(DEFAULT_THRESHOLD_PARAMS),
      sites: SITES,
      enrolled: () => true,
      holders: HOLDERS,
      minContributors: 2,
      generation: 7,
    });
    for (const site of SITES) {
      dealThresholdShares({
        dir: committeeDir,
        site,
        roster: committee,
        ctx,
        signingKey: loadSigningKeyPair(join(dir, site, `${site}.key`)),
        kemKeys: (id) => registry.currentKemKey(id),
      });
    }
    held = new Map(
      SITES.map((site) => [
        site,
        loadThresholdKey(
          ctx,
          collectThresholdShares({ dir: committeeDir, site, roster: committee, ctx, registry }).keyFile,
          FED,
        ),
      ]),
    );
  });

  it('the roster names the holders, t is ⌈2·2/3⌉ of them, and the seed binds who holds', () => {
    expect(committee.holders).toEqual(HOLDERS);
    expect(committee.threshold).toBe(2);
    expect(epochSeed(committee)).not.toEqual(epochSeed({ ...committee, holders: ['site-a', 'site-b'] }));
    // Naming every site a holder is the roster that names none.
    expect(epochSeed({ ...committee, holders: SITES })).toEqual(
      epochSeed({ ...committee, holders: undefined }),
    );
  });

  it('envelopes go to each holder, and from each holder to every site: n·K + K·(n − K), not n²', () => {
    const names = readdirSync(join(committeeDir, 'public')).filter(
      (f) => f.includes('.g') || f.endsWith('.tshare.env'),
    );
    const pairs = SITES.flatMap((d) =>
      SITES.filter((r) => HOLDERS.includes(r) || HOLDERS.includes(d)).map((r) => thresholdFiles.share(d, r)),
    );
    expect(pairs.length).toBe(4 * 2 + 2 * 2);
    for (const p of pairs) expect(names).toContain(p);
    // A non-holder deals nothing to a non-holder.
    expect(() => statSync(join(committeeDir, 'public', thresholdFiles.share('site-b', 'site-d')))).toThrow();
  });

  it('holders hold a share of every site’s secret; the others hold only their own secret', () => {
    for (const site of SITES) {
      const k = held.get(site)!;
      expect(k.epochId).toEqual(held.get('site-a')!.epochId);
      expect([...k.shares.keys()].sort()).toEqual(HOLDERS.includes(site) ? [...SITES].sort() : []);
    }
  });

  it('the t holders decrypt the sum of every site’s ciphertext exactly', () => {
    const got = encryptAllThenDecrypt(committee, held, HOLDERS);
    for (let k = 0; k < 200; k++) expect(Math.round(got[k]!) + 0).toBe(4 * (k % 1000));
  });

  it('a roster whose holders are not its sites, out of order, or fewer than t is refused', () => {
    expect(errorCode(() => assertRoster({ ...committee, holders: ['site-x'] }))).toBe('INVALID_ARGUMENT');
    expect(errorCode(() => assertRoster({ ...committee, holders: ['site-c', 'site-a'] }))).toBe(
      'INVALID_ARGUMENT',
    );
    expect(errorCode(() => assertRoster({ ...committee, holders: ['site-a'] }))).toBe('INVALID_ARGUMENT');
    expect(holdersProblem(committee, HOLDERS)).toBeUndefined();
    expect(holdersProblem(committee, undefined)).toMatch(/not the configured ones/);
    expect(holdersProblem({ ...committee, holders: ['site-a', 'site-b'] }, HOLDERS)).toMatch(
      /not the configured/,
    );
  });
});
