import {
  copyFileSync,
  cpSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CkksContext, DEFAULT_CKKS_PARAMS, getCkksContext } from '../../crypto/ckks/index.ts';
import {
  loadKemKeyPair,
  loadKemPublicKey,
  readSealedEnvelope,
  sealEnvelope,
  secretFingerprint,
  unwrapSecret,
  wrapSecret,
} from '../../crypto/kem/index.ts';
import { loadSigningKeyPair } from '../../crypto/signature/index.ts';
import { loadRegistry, RegistryView } from '../../src/registry/index.ts';
import {
  type CeremonyResult,
  CKKS_KEY_PURPOSE,
  DATA_KEY_PURPOSE,
  type EnvelopeTrust,
  enrollSite,
  loadSiteCkks,
  loadSiteDataKey,
  registryEnvelopeMakers,
  runKeyCeremony,
} from '../../src/services/key-ceremony.ts';
import { errorCode } from '../helpers/error-code.ts';

const FED = 'demo-federation';
const SITES = ['site-a', 'site-b', 'site-c'];
const root = mkdtempSync(join(tmpdir(), 'cohort-ceremony-'));
const dir = join(root, 'keys');
let ckks: CkksContext;
let ceremony: CeremonyResult;
/** What a site of the ceremony trusts: the registry's sites as makers, the ceremony's fingerprints pinned. */
let trust: EnvelopeTrust;

afterAll(() => rmSync(root, { recursive: true, force: true }));

beforeAll(async () => {
  ckks = await getCkksContext(DEFAULT_CKKS_PARAMS);
  ceremony = runKeyCeremony({
    dir,
    federation: FED,
    coordinator: 'coordinator',
    aggregators: ['agg-1'],
    sites: SITES,
    algorithm: 'falcon-512',
    ckks,
  });
  const view = RegistryView.fromRegistry(
    loadRegistry(ceremony.registry.path, ceremony.registry.sha256).registry,
  );
  trust = {
    federation: FED,
    makers: registryEnvelopeMakers(view),
    fingerprints: {
      [CKKS_KEY_PURPOSE]: ceremony.keyFingerprints.ckks,
      [DATA_KEY_PURPOSE]: ceremony.keyFingerprints.data,
    },
  };
});

const mode = (file: string) => statSync(file).mode & 0o777;
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

/** A copy of the ceremony folder, to tamper with. */
function scratch(name: string): string {
  const copy = join(root, name);
  cpSync(dir, copy, { recursive: true });
  return copy;
}

/** A file of the shared public folder, and of a member's own folder (the ceremony's layout). */
const pub = (keys: string, file: string) => join(keys, 'public', file);
const own = (keys: string, id: string, file: string) => join(keys, id, file);

describe('runKeyCeremony: federation data key', () => {
  it('gives every site the same 32-byte data key', () => {
    const keys = SITES.map((site) => loadSiteDataKey(dir, site, trust));
    for (const key of keys) expect(key.length).toBe(32);
    expect(new Set(keys.map(hex)).size).toBe(1);
    expect(hex(keys[0]!)).not.toBe('00'.repeat(32));
  });

  it('writes <site>.data.env 0600 for sites only, and never the key in the clear', () => {
    const key = loadSiteDataKey(dir, 'site-a', trust);
    for (const site of SITES) {
      expect(mode(pub(dir, `${site}.data.env`))).toBe(0o600);
      expect(mode(pub(dir, `${site}.ckks.env`))).toBe(0o600);
      expect(mode(own(dir, site, `${site}.kem`))).toBe(0o600);
    }
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) =>
      statSync(join(dir, f)).isFile(),
    );
    expect(files.filter((f) => f.endsWith('.data.env')).sort()).toEqual(
      SITES.map((s) => join('public', `${s}.data.env`)),
    );
    for (const file of files) {
      expect(Buffer.from(readFileSync(join(dir, file))).includes(Buffer.from(key))).toBe(false);
    }
  });

  it('binds each envelope to its site, federation and purpose', () => {
    const kemA = loadKemKeyPair(own(dir, 'site-a', 'site-a.kem'));
    const envelopeB = readSealedEnvelope(readFileSync(pub(dir, 'site-b.data.env'))).inner;
    const envelopeA = readSealedEnvelope(readFileSync(pub(dir, 'site-a.data.env'))).inner;
    const ctx = { federation: FED, purpose: DATA_KEY_PURPOSE };
    expect(errorCode(() => unwrapSecret(kemA.secretKey, envelopeB, { ...ctx, recipient: 'site-a' }))).toBe(
      'UNWRAP_FAILED',
    );
    expect(errorCode(() => unwrapSecret(kemA.secretKey, envelopeB, { ...ctx, recipient: 'site-b' }))).toBe(
      'UNWRAP_FAILED',
    );
    expect(
      errorCode(() =>
        unwrapSecret(kemA.secretKey, envelopeA, { ...ctx, recipient: 'site-a', purpose: CKKS_KEY_PURPOSE }),
      ),
    ).toBe('UNWRAP_FAILED');
    expect(unwrapSecret(kemA.secretKey, envelopeA, { ...ctx, recipient: 'site-a' }).length).toBe(32);

    // Site a's folder holding site b's envelope under its own name.
    const swapped = scratch('swapped');
    copyFileSync(pub(dir, 'site-b.data.env'), pub(swapped, 'site-a.data.env'));
    expect(errorCode(() => loadSiteDataKey(swapped, 'site-a', trust))).toBe('ENVELOPE_CONTEXT_MISMATCH');
    expect(
      errorCode(() => loadSiteDataKey(dir, 'site-a', { ...trust, federation: 'other-federation' })),
    ).toBe('ENVELOPE_CONTEXT_MISMATCH');
    // The deprecated form (a federation id, no trust) still binds the KEM envelope to its context.
    expect(errorCode(() => loadSiteDataKey(swapped, 'site-a', FED))).toBe('UNWRAP_FAILED');
  });

  it('seals every envelope by the key site, stating the fingerprints the ceremony returns', () => {
    for (const site of SITES) {
      for (const [file, purpose, fingerprint] of [
        [`${site}.ckks.env`, CKKS_KEY_PURPOSE, ceremony.keyFingerprints.ckks],
        [`${site}.data.env`, DATA_KEY_PURPOSE, ceremony.keyFingerprints.data],
      ] as const) {
        const { statement } = readSealedEnvelope(readFileSync(pub(dir, file)));
        expect(statement).toMatchObject({
          federation: FED,
          recipient: site,
          purpose,
          maker: 'site-a',
          fingerprint,
        });
      }
    }
    const key = loadSiteDataKey(dir, 'site-b', trust);
    expect(secretFingerprint(DATA_KEY_PURPOSE, key)).toBe(ceremony.keyFingerprints.data);
  });

  it('uses a fresh data key per ceremony', () => {
    const other = join(root, 'other-ceremony');
    runKeyCeremony({
      dir: other,
      federation: FED,
      coordinator: 'coordinator',
      aggregators: ['agg-1'],
      sites: ['site-a'],
      algorithm: 'falcon-512',
      ckks,
    });
    expect(hex(loadSiteDataKey(other, 'site-a', FED))).not.toBe(hex(loadSiteDataKey(dir, 'site-a', trust)));
  });

  it('leaves the CKKS envelope loadable', () => {
    const keyset = loadSiteCkks(ckks, dir, 'site-c', trust);
    keyset.delete();
  });
});

describe('enrollSite', () => {
  it('seals the same secrets for the new site with the sponsor\u2019s key: the pinned fingerprints hold', () => {
    const keys = scratch('enroll');
    enrollSite({
      dir: keys,
      federation: FED,
      sponsor: 'site-b',
      site: 'site-d',
      algorithm: 'falcon-512',
      ckks,
      trust,
    });
    for (const file of ['site-d.ckks.env', 'site-d.data.env']) {
      expect(readSealedEnvelope(readFileSync(pub(keys, file))).statement.maker).toBe('site-b');
    }
    expect(hex(loadSiteDataKey(keys, 'site-d', trust))).toBe(hex(loadSiteDataKey(dir, 'site-a', trust)));
    loadSiteCkks(ckks, keys, 'site-d', trust).delete();
    expect(mode(own(keys, 'site-d', 'site-d.key'))).toBe(0o600);
  });
});

describe('loadSiteDataKey errors', () => {
  it('KEY_FILE_UNREADABLE for a missing envelope or KEM key', () => {
    const missing = scratch('missing');
    unlinkSync(pub(missing, 'site-a.data.env'));
    expect(errorCode(() => loadSiteDataKey(missing, 'site-a', trust))).toBe('KEY_FILE_UNREADABLE');
    expect(errorCode(() => loadSiteDataKey(dir, 'site-z', trust))).toBe('KEY_FILE_UNREADABLE');
  });

  it('ENVELOPE_SIGNATURE_INVALID for a tampered envelope, naming the file', () => {
    const tampered = scratch('tampered');
    const path = pub(tampered, 'site-a.data.env');
    const bytes = readFileSync(path);
    bytes[bytes.length - 20]! ^= 1;
    writeFileSync(path, bytes, { mode: 0o600 });
    expect(errorCode(() => loadSiteDataKey(tampered, 'site-a', trust))).toBe('ENVELOPE_SIGNATURE_INVALID');
    expect(() => loadSiteDataKey(tampered, 'site-a', trust)).toThrow(path);
    // Unchecked (deprecated form), the KEM envelope's own tag still catches it.
    expect(errorCode(() => loadSiteDataKey(tampered, 'site-a', FED))).toBe('UNWRAP_FAILED');
  });

  it('refuses a bare envelope, an unknown maker and another secret than the pinned one', () => {
    const subs = scratch('substituted');
    const kemPub = loadKemPublicKey(pub(subs, 'site-a.kem.pub'));
    const ctx = { federation: FED, recipient: 'site-a', purpose: DATA_KEY_PURPOSE };
    const write = (envelope: Uint8Array) =>
      writeFileSync(pub(subs, 'site-a.data.env'), envelope, { mode: 0o600 });
    write(wrapSecret(kemPub, new Uint8Array(32).fill(7), ctx));
    expect(errorCode(() => loadSiteDataKey(subs, 'site-a', trust))).toBe('ENVELOPE_UNSIGNED');
    const coordinator = loadSigningKeyPair(own(subs, 'coordinator', 'coordinator.key'));
    write(sealEnvelope({ id: 'coordinator', key: coordinator }, kemPub, new Uint8Array(32).fill(7), ctx));
    expect(errorCode(() => loadSiteDataKey(subs, 'site-a', trust))).toBe('ENVELOPE_MAKER_REFUSED');
    const siteB = loadSigningKeyPair(own(subs, 'site-b', 'site-b.key'));
    write(sealEnvelope({ id: 'site-b', key: siteB }, kemPub, new Uint8Array(32).fill(7), ctx));
    expect(errorCode(() => loadSiteDataKey(subs, 'site-a', trust))).toBe('KEY_FINGERPRINT_MISMATCH');
    // Without a pinned fingerprint a registered site's envelope opens: the pin is what stops it.
    expect(loadSiteDataKey(subs, 'site-a', { ...trust, fingerprints: {} })).toEqual(
      new Uint8Array(32).fill(7),
    );
  });

  it('KEY_INVALID for an envelope that does not hold 32 bytes', () => {
    const short = scratch('short');
    const maker = { id: 'site-a', key: loadSigningKeyPair(own(short, 'site-a', 'site-a.key')) };
    const envelope = sealEnvelope(
      maker,
      loadKemPublicKey(pub(short, 'site-a.kem.pub')),
      new Uint8Array(16).fill(7),
      {
        federation: FED,
        recipient: 'site-a',
        purpose: DATA_KEY_PURPOSE,
      },
    );
    writeFileSync(pub(short, 'site-a.data.env'), envelope, { mode: 0o600 });
    expect(errorCode(() => loadSiteDataKey(short, 'site-a', { ...trust, fingerprints: {} }))).toBe(
      'KEY_INVALID',
    );
  });

  it('INVALID_ARGUMENT naming an empty argument', () => {
    expect(() => loadSiteDataKey(dir, '', trust)).toThrow(/site must be a non-empty string/);
    expect(() => loadSiteDataKey(dir, 'site-a', '')).toThrow(/federation must be a non-empty string/);
    expect(() => loadSiteDataKey(dir, 'site-a', { ...trust, makers: undefined } as never)).toThrow(
      /trust must be an EnvelopeTrust/,
    );
  });
});
