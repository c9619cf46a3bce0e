// The audit bundle format (byte-exact round trip, structural refusals) and the trust an audit
// takes from it only when pinned.
import { describe, expect, it } from 'vitest';
import { sha256, sha256Hex } from '../../crypto/digest/index.ts';
import { generateSigningKeyPair, toPublicSigningKey } from '../../crypto/signature/index.ts';
import {
  AUDIT_BUNDLE_MAGIC,
  type AuditBundle,
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
});
