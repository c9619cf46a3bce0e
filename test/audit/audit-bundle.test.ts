// The audit bundle format (byte-exact round trip, structural refusals) and the trust an audit
// takes from it only when pinned.
import { describe, expect, it } from 'vitest';
import { sha256, sha256Hex } from '../../crypto/digest/index.ts';
import { generateSigningKeyPair, toPublicSigningKey } from '../../crypto/signature/index.ts';
import {
  AUDIT_BUNDLE_MAGIC,
  type AuditBundle,
  BUNDLE_ITEM,
  bundleSealValid,
  decodeAuditBundle,
  encodeAuditBundle,
  resolveAuditTrust,
} from '../../src/audit/index.ts';
import { signRegistry } from '../../src/registry/index.ts';
import { bytesToHex, genesisCommit } from '../../src/versions/index.ts';
import { errorCode } from '../helpers/error-code.ts';

const officer = generateSigningKeyPair('falcon-512', new Uint8Array(48).fill(1));
const registryBytes = signRegistry(
  {
    federation: 'bfed',
    members: [
      {
        id: 'coordinator',
        role: 'coordinator',
        signingKey: toPublicSigningKey(generateSigningKeyPair('falcon-512', new Uint8Array(48).fill(2))),
        kemKey: undefined,
        nkey: undefined,
        validFromRound: 0,
      },
    ],
    officerKey: toPublicSigningKey(officer),
    issuedUnixMs: 1,
  },
  officer,
);
const genesis = genesisCommit(new Float32Array([1, 2]), new TextEncoder().encode('{}'));

const bundle: AuditBundle = {
  meta: {
    format: 'cohort-audit-bundle',
    version: 1,
    federation: 'bfed',
    stream: 'COHORT_BFED',
    member: 'auditor-1',
    exportedUnixMs: 1_700_000_000_000,
    lastSequence: 5,
    aggregates: 'included',
  },
  registry: registryBytes,
  genesis,
  entries: [
    { sequence: 1, bytes: new Uint8Array([1, 2, 3]) },
    { sequence: 2, bytes: new Uint8Array(0) },
    { sequence: 5, bytes: new Uint8Array(70_000).fill(7) },
  ],
  objects: new Map<string, Uint8Array | null>([
    ['round-1', new Uint8Array([9, 9])],
    ['round-2', null],
  ]),
};

/** Rewrites the trailer so a deliberately altered body still passes the transit check. */
function resealed(bytes: Uint8Array): Uint8Array {
  const out = bytes.slice();
  out.set(sha256(out.subarray(0, out.length - 41)), out.length - 32);
  return out;
}

describe('audit bundle format', () => {
  it('round-trips byte for byte: every entry, object and absence as written', async () => {
    const bytes = await encodeAuditBundle(bundle);
    expect(new Uint8Array(bytes.subarray(0, 12))).toEqual(AUDIT_BUNDLE_MAGIC);
    const back = decodeAuditBundle(bytes);
    expect(back.meta).toEqual(bundle.meta);
    expect(Buffer.from(back.registry!)).toEqual(Buffer.from(registryBytes));
    expect(bytesToHex(back.genesis!.hash)).toBe(bytesToHex(genesis.hash));
    expect(back.entries).toEqual(bundle.entries);
    expect([...back.objects]).toEqual([...bundle.objects]);
    expect(await encodeAuditBundle(back)).toEqual(bytes);
  });

  it('refuses a damaged, truncated or misordered bundle (BUNDLE_INVALID)', async () => {
    const bytes = await encodeAuditBundle(bundle);
    const flipped = bytes.slice();
    flipped[100]! ^= 1;
    expect(errorCode(() => decodeAuditBundle(flipped))).toBe('BUNDLE_INVALID');
    expect(errorCode(() => decodeAuditBundle(bytes.subarray(0, bytes.length - 1)))).toBe('BUNDLE_INVALID');
    expect(errorCode(() => decodeAuditBundle(new TextEncoder().encode('not a bundle at all')))).toBe(
      'BUNDLE_INVALID',
    );
    // lastSequence 2 in the meta, an entry 5 after it (the meta's JSON keeps its length: "5" → "2").
    const meta = new TextEncoder().encode('"lastSequence":5');
    const at = Buffer.from(bytes).indexOf(Buffer.from(meta));
    const beyond = bytes.slice();
    beyond[at + meta.length - 1] = '2'.charCodeAt(0);
    expect(() => decodeAuditBundle(resealed(beyond))).toThrow(/entry 5 is beyond the last sequence 2/);
    await expect(
      encodeAuditBundle({ ...bundle, entries: [bundle.entries[1]!, bundle.entries[0]!] }),
    ).rejects.toThrow(/strictly increasing/);
  });

  it('trusts a bundle registry only under a pin, and a genesis only as pinned', async () => {
    const b = decodeAuditBundle(await encodeAuditBundle(bundle));
    expect(errorCode(() => resolveAuditTrust({ federation: 'bfed' }, b))).toBe('AUDIT_TRUST_MISSING');
    expect(errorCode(() => resolveAuditTrust({ federation: 'bfed', registryPin: '00'.repeat(32) }, b))).toBe(
      'AUDIT_TRUST_MISMATCH',
    );
    const pin = sha256Hex(registryBytes);
    const trust = resolveAuditTrust({ federation: 'bfed', registryPin: pin }, b);
    expect(trust.registry.sha256).toBe(pin);
    expect(bytesToHex(trust.genesis.hash)).toBe(bytesToHex(genesis.hash));
    expect(
      errorCode(() =>
        resolveAuditTrust({ federation: 'bfed', registryPin: pin, genesisPin: '11'.repeat(32) }, b),
      ),
    ).toBe('AUDIT_TRUST_MISMATCH');
    expect(errorCode(() => resolveAuditTrust({ federation: 'other', registryPin: pin }, b))).toBe(
      'AUDIT_TRUST_MISMATCH',
    );
  });

  describe('version 4: sealed by its exporter', () => {
    const auditor = generateSigningKeyPair('falcon-512', new Uint8Array(48).fill(3));
    const other = generateSigningKeyPair('falcon-512', new Uint8Array(48).fill(4));
    const v4: AuditBundle = {
      ...bundle,
      meta: { ...bundle.meta, version: 4, contributions: 'included' },
      contributions: new Map<string, Uint8Array | null>([['round-1/0/agg-1/site-1', new Uint8Array([4])]]),
    };
    const signer = { member: 'auditor-1', key: auditor };

    it('seals the SHA-256 of every byte before the seal; decodes and re-encodes byte for byte', async () => {
      const bytes = await encodeAuditBundle(v4, signer);
      const back = decodeAuditBundle(bytes);
      expect(back.seal?.signer).toBe('auditor-1');
      // The seal item (type 0xFE) and the trailer (9 + 32 bytes) end the file.
      const sealLength = 9 + 'auditor-1'.length + back.seal!.signature.length;
      const sealAt = bytes.length - 41 - sealLength;
      expect(bytes[sealAt]).toBe(BUNDLE_ITEM.seal);
      expect(Buffer.from(back.seal!.digest)).toEqual(Buffer.from(sha256(bytes.subarray(0, sealAt))));
      expect(bundleSealValid(back.seal!, toPublicSigningKey(auditor))).toBe(true);
      expect(bundleSealValid(back.seal!, toPublicSigningKey(other))).toBe(false);
      expect(await encodeAuditBundle(back)).toEqual(bytes);
    });

    it('a byte changed before the seal, the trailer recomputed: decodes, the seal no longer verifies', async () => {
      const bytes = await encodeAuditBundle(v4, signer);
      const changed = bytes.slice();
      changed[Buffer.from(bytes).indexOf(Buffer.alloc(64, 7)) + 10]! ^= 1; // inside entry 5
      const back = decodeAuditBundle(resealed(changed));
      expect(bundleSealValid(back.seal!, toPublicSigningKey(auditor))).toBe(false);
    });

    it('writes no version 4 bundle without a seal of the meta’s member, and no seal in an older version', async () => {
      await expect(encodeAuditBundle(v4)).rejects.toThrow(/must be sealed by its exporter/);
      await expect(encodeAuditBundle(v4, { member: 'auditor-2', key: auditor })).rejects.toThrow(
        /sealed by "auditor-2", its meta names "auditor-1"/,
      );
      await expect(encodeAuditBundle(bundle, signer)).rejects.toThrow(/holds no seal/);
      // A decoded bundle's seal is copied only over the same bytes.
      const back = decodeAuditBundle(await encodeAuditBundle(v4, signer));
      await expect(
        encodeAuditBundle({
          ...back,
          meta: { ...back.meta, lastSequence: 4 },
          entries: back.entries.slice(0, 2),
        }),
      ).rejects.toThrow(/not over these bytes/);
    });

    it('refuses a version 4 bundle without its seal, or sealed by another member than its meta names (BUNDLE_INVALID)', async () => {
      const bytes = await encodeAuditBundle(v4, signer);
      const back = decodeAuditBundle(bytes);
      const sealLength = 9 + 'auditor-1'.length + back.seal!.signature.length;
      const body = bytes.subarray(0, bytes.length - 41 - sealLength);
      const trailer = new Uint8Array(41);
      trailer[0] = BUNDLE_ITEM.trailer;
      new DataView(trailer.buffer).setUint32(5, 32, false);
      trailer.set(sha256(body), 9);
      const unsealed = new Uint8Array(Buffer.concat([body, trailer]));
      expect(() => decodeAuditBundle(unsealed)).toThrow(/must end with its exporter's seal/);
      // The seal's name is the signer: "auditor-1" → "auditor-2".
      const renamed = bytes.slice();
      renamed[bytes.length - 41 - sealLength + 5 + 'auditor-'.length] = '2'.charCodeAt(0);
      expect(() => decodeAuditBundle(resealed(renamed))).toThrow(
        /sealed by "auditor-2", but its meta names "auditor-1"/,
      );
    });
  });
});
