// The signed member registry (src/registry): codec known answers, sign/verify, tamper refusals,
// the pinned file, registry changes and the round-aware view.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createUser } from '@nats-io/nkeys';
import protobuf from 'protobufjs';
import { afterAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../crypto/digest/index.ts';
import { generateKemKeyPair, ML_KEM_768 } from '../../crypto/kem/index.ts';
import {
  generateSigningKeyPair,
  type SigningKeyPair,
  sign,
  toPublicSigningKey,
} from '../../crypto/signature/index.ts';
import { PROTO_PATH } from '../../src/protocol/index.ts';
import {
  decodeMemberRegistry,
  decodeRegistryChangeRecord,
  encodeMemberRegistry,
  encodeRegistryChangeRecord,
  loadRegistry,
  type MemberRegistry,
  openRegistry,
  openRegistryChange,
  REGISTRY_CHANGE_DOMAIN,
  REGISTRY_DOMAIN,
  type RegistryChangeBody,
  RegistryView,
  sealRegistryChange,
  signRegistry,
  writeRegistry,
} from '../../src/registry/index.ts';
import { errorCode } from '../helpers/error-code.ts';

const root = protobuf.loadSync(PROTO_PATH);
const SignedRegistry = root.lookupType('cohort.v1.SignedRegistry');
const dir = mkdtempSync(join(tmpdir(), 'cohort-registry-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const seed = (n: number, length: number) => new Uint8Array(length).fill(n);
const falcon = (n: number): SigningKeyPair => generateSigningKeyPair('falcon-512', seed(n, 48));
const kem = (n: number) => generateKemKeyPair(seed(n, ML_KEM_768.seedBytes)).publicKey;
const NKEY = createUser().getPublicKey();

const officer = falcon(1);
const keys = { coordinator: falcon(2), 'agg-1': falcon(3), 'site-1': falcon(4), 'site-2': falcon(5) };

function registry(overrides: Partial<MemberRegistry> = {}): MemberRegistry {
  return {
    federation: 'kat',
    members: [
      {
        id: 'site-2',
        role: 'site',
        signingKey: keys['site-2'],
        kemKey: kem(5),
        nkey: undefined,
        validFromRound: 0,
      },
      {
        id: 'coordinator',
        role: 'coordinator',
        signingKey: keys.coordinator,
        kemKey: undefined,
        nkey: undefined,
        validFromRound: 0,
      },
      {
        id: 'agg-1',
        role: 'aggregator',
        signingKey: keys['agg-1'],
        kemKey: undefined,
        nkey: undefined,
        validFromRound: 0,
      },
      {
        id: 'site-1',
        role: 'site',
        signingKey: keys['site-1'],
        kemKey: kem(4),
        nkey: undefined,
        validFromRound: 0,
      },
    ].map((m) => ({ ...m, signingKey: toPublicSigningKey(m.signingKey) })) as MemberRegistry['members'],
    officerKey: toPublicSigningKey(officer),
    issuedUnixMs: 1_700_000_000_000,
    ...overrides,
  };
}

describe('registry codec and signature', () => {
  it('encodes deterministically (known answer), members sorted by id', () => {
    const body = encodeMemberRegistry(registry());
    expect(sha256Hex(body)).toBe(KAT_BODY_SHA256);
    expect(decodeMemberRegistry(body).members.map((m) => m.id)).toEqual([
      'agg-1',
      'coordinator',
      'site-1',
      'site-2',
    ]);
  });

  it('signs and opens a registry: same members, keys, officer; SHA-256 of the file', () => {
    const bytes = signRegistry(registry(), officer);
    const opened = openRegistry(bytes, 'kat.bin');
    expect(opened.sha256).toBe(sha256Hex(bytes));
    expect(opened.registry.federation).toBe('kat');
    expect(opened.registry.officerKey.keyId).toBe(officer.keyId);
    const site1 = opened.registry.members.find((m) => m.id === 'site-1')!;
    expect(site1.signingKey.keyId).toBe(keys['site-1'].keyId);
    expect(Buffer.from(site1.kemKey!).equals(Buffer.from(kem(4)))).toBe(true);
    expect(opened.registry.members.find((m) => m.id === 'agg-1')!.kemKey).toBeUndefined();
    // The signature covers the exact body under the domain "registry".
    const signed = SignedRegistry.decode(bytes) as unknown as { registry: Uint8Array };
    expect(sha256Hex(signed.registry)).toBe(KAT_BODY_SHA256);
  });

  it('refuses a tampered body, a signature by another key, another domain, and garbage', () => {
    const bytes = signRegistry(registry(), officer);
    const signed = SignedRegistry.toObject(SignedRegistry.decode(bytes)) as {
      registry: Uint8Array;
      signature: Uint8Array;
    };
    const reencode = (registryBytes: Uint8Array, signature: Uint8Array) =>
      SignedRegistry.encode(SignedRegistry.fromObject({ registry: registryBytes, signature })).finish();

    // A registry naming another member key, with the old signature.
    const swapped = registry({
      members: registry().members.map((m) =>
        m.id === 'site-1' ? { ...m, signingKey: toPublicSigningKey(falcon(9)) } : m,
      ),
    });
    expect(errorCode(() => openRegistry(reencode(encodeMemberRegistry(swapped), signed.signature)))).toBe(
      'REGISTRY_SIGNATURE_INVALID',
    );
    // One flipped byte in the issued time (still decodes).
    const body = Uint8Array.from(signed.registry);
    body[body.length - 2]! ^= 1;
    expect(errorCode(() => openRegistry(reencode(body, signed.signature)))).toBe(
      'REGISTRY_SIGNATURE_INVALID',
    );
    // Signed by someone else who names themselves the officer: verifies, but its hash is not the pin.
    const mallory = falcon(7);
    const forged = signRegistry(registry({ officerKey: toPublicSigningKey(mallory) }), mallory);
    expect(openRegistry(forged).registry.officerKey.keyId).toBe(mallory.keyId);
    // The officer's key, but signed under another domain.
    const other = sign(officer, REGISTRY_CHANGE_DOMAIN, signed.registry);
    expect(errorCode(() => openRegistry(reencode(signed.registry, other)))).toBe(
      'REGISTRY_SIGNATURE_INVALID',
    );
    // Another officer key than the registry names.
    expect(errorCode(() => signRegistry(registry(), mallory))).toBe('REGISTRY_INVALID');
    expect(errorCode(() => openRegistry(new Uint8Array([0xff, 0xff, 0xff])))).toBe('REGISTRY_INVALID');
    expect(errorCode(() => openRegistry(bytes.subarray(0, bytes.length - 40)))).toBe('REGISTRY_INVALID');
  });

  it('refuses malformed registries: duplicate ids, two coordinators, a site without KEM key, reserved ids', () => {
    const r = registry();
    const dup = { ...r, members: [...r.members, r.members[0]!] };
    expect(errorCode(() => encodeMemberRegistry(dup))).toBe('REGISTRY_INVALID');
    const twoCoordinators = {
      ...r,
      members: r.members.map((m) => (m.id === 'agg-1' ? { ...m, role: 'coordinator' as const } : m)),
    };
    expect(errorCode(() => encodeMemberRegistry(twoCoordinators))).toBe('REGISTRY_INVALID');
    const noKem = {
      ...r,
      members: r.members.map((m) => (m.id === 'site-1' ? { ...m, kemKey: undefined } : m)),
    };
    expect(errorCode(() => encodeMemberRegistry(noKem))).toBe('REGISTRY_INVALID');
    const reserved = {
      ...r,
      members: r.members.map((m) => (m.id === 'site-2' ? { ...m, id: 'public' } : m)),
    };
    expect(errorCode(() => encodeMemberRegistry(reserved))).toBe('REGISTRY_INVALID');
    const badNkey = {
      ...r,
      members: r.members.map((m) => (m.id === 'agg-1' ? { ...m, nkey: 'UNOTANNKEY' } : m)),
    };
    expect(errorCode(() => encodeMemberRegistry(badNkey))).toBe('REGISTRY_INVALID');
    const withNkey = { ...r, members: r.members.map((m) => (m.id === 'agg-1' ? { ...m, nkey: NKEY } : m)) };
    expect(openRegistry(signRegistry(withNkey, officer)).registry.members[0]!.nkey).toBe(NKEY);
  });

  it('loads a pinned file, and refuses it on another hash (naming the file) or when unreadable', () => {
    const path = join(dir, 'registry.bin');
    const pin = writeRegistry(path, signRegistry(registry(), officer));
    expect(loadRegistry(path, pin.sha256).sha256).toBe(pin.sha256);
    expect(loadRegistry(path, pin.sha256.toUpperCase()).registry.federation).toBe('kat');
    const wrong = `${pin.sha256.slice(0, 63)}${pin.sha256.endsWith('0') ? '1' : '0'}`;
    expect(errorCode(() => loadRegistry(path, wrong))).toBe('REGISTRY_PIN_MISMATCH');
    expect(() => loadRegistry(path, wrong)).toThrow(path);
    expect(errorCode(() => loadRegistry(join(dir, 'absent.bin'), pin.sha256))).toBe('REGISTRY_UNREADABLE');
    // A file replaced by a validly signed one of another officer: refused by the pin before parsing.
    const mallory = falcon(7);
    writeFileSync(path, signRegistry(registry({ officerKey: toPublicSigningKey(mallory) }), mallory));
    expect(errorCode(() => loadRegistry(path, pin.sha256))).toBe('REGISTRY_PIN_MISMATCH');
  });
});

function change(overrides: Partial<RegistryChangeBody> = {}): RegistryChangeBody {
  return {
    federation: 'kat',
    kind: 'rotate',
    member: 'site-1',
    role: 'site',
    signingKey: toPublicSigningKey(falcon(11)),
    kemKey: undefined,
    nkey: undefined,
    fromRound: 3,
    issuedUnixMs: 1_700_000_000_000,
    reason: 'scheduled rotation',
    ...overrides,
  };
}

describe('registry changes', () => {
  it('seal/open round trip through the request encoding', () => {
    const record = sealRegistryChange(change(), officer);
    const wire = decodeRegistryChangeRecord(encodeRegistryChangeRecord(record));
    const opened = openRegistryChange(wire, toPublicSigningKey(officer));
    expect(opened).toMatchObject({
      kind: 'rotate',
      member: 'site-1',
      role: 'site',
      fromRound: 3,
      reason: 'scheduled rotation',
    });
    expect(opened.signingKey!.keyId).toBe(falcon(11).keyId);
  });

  it('refuses a change signed by another key, under another domain, or tampered', () => {
    const officerKey = toPublicSigningKey(officer);
    const mallory = falcon(7);
    expect(errorCode(() => openRegistryChange(sealRegistryChange(change(), mallory), officerKey))).toBe(
      'REGISTRY_SIGNATURE_INVALID',
    );
    const record = sealRegistryChange(change(), officer);
    const wrongDomain = { ...record, signature: sign(officer, REGISTRY_DOMAIN, record.body) };
    expect(errorCode(() => openRegistryChange(wrongDomain, officerKey))).toBe('REGISTRY_SIGNATURE_INVALID');
    const body = Uint8Array.from(record.body);
    body[body.length - 3]! ^= 1;
    expect(errorCode(() => openRegistryChange({ ...record, body }, officerKey))).toBe(
      'REGISTRY_SIGNATURE_INVALID',
    );
  });

  it('refuses malformed changes: keys on a revoke, a rotate without key, round 0, a KEM key for an aggregator', () => {
    expect(errorCode(() => sealRegistryChange(change({ kind: 'revoke' }), officer))).toBe('REGISTRY_INVALID');
    expect(errorCode(() => sealRegistryChange(change({ signingKey: undefined }), officer))).toBe(
      'REGISTRY_INVALID',
    );
    expect(errorCode(() => sealRegistryChange(change({ fromRound: 0 }), officer))).toBe('REGISTRY_INVALID');
    expect(
      errorCode(() =>
        sealRegistryChange(change({ member: 'agg-1', role: 'aggregator', kemKey: kem(2) }), officer),
      ),
    ).toBe('REGISTRY_INVALID');
    expect(errorCode(() => sealRegistryChange(change({ kind: 'enroll', member: 'site-9' }), officer))).toBe(
      'REGISTRY_INVALID',
    ); // a site needs its KEM key
  });
});

describe('RegistryView: keys by round', () => {
  const base = () => RegistryView.fromRegistry(openRegistry(signRegistry(registry(), officer)).registry);

  it('a rotation from round r: the old key up to r-1, the new key from r', () => {
    const view = base();
    view.apply(change({ fromRound: 3 }), 3, true);
    expect(view.keyFor('site-1', 2)!.keyId).toBe(keys['site-1'].keyId);
    expect(view.keyFor('site-1', 3)!.keyId).toBe(falcon(11).keyId);
    expect(view.keyFor('site-1', 50)!.keyId).toBe(falcon(11).keyId);
    view.setRound(2);
    expect(view.current('site-1')!.keyId).toBe(keys['site-1'].keyId);
    view.setRound(3);
    expect(view.current('site-1')!.keyId).toBe(falcon(11).keyId);
    // The KEM key stays when a rotation brings none.
    expect(Buffer.from(view.currentKemKey('site-1')!).equals(Buffer.from(kem(4)))).toBe(true);
  });

  it('a revocation from round r: no key from r on, never re-enrolled; an enrollment from its round', () => {
    const view = base();
    view.apply(change({ kind: 'revoke', member: 'site-2', signingKey: undefined, fromRound: 4 }), 4, true);
    expect(view.keyFor('site-2', 3)!.keyId).toBe(keys['site-2'].keyId);
    expect(view.keyFor('site-2', 4)).toBeUndefined();
    expect(view.isRevoked('site-2', 3)).toBe(false);
    expect(view.isRevoked('site-2', 4)).toBe(true);
    const reenroll = change({ kind: 'enroll', member: 'site-2', kemKey: kem(6), fromRound: 5 });
    expect(view.problem(reenroll, 5, true)).toMatch(/never reused/);
    expect(view.problem(change({ member: 'site-2', fromRound: 5 }), 5, true)).toMatch(/revoked/);
    view.apply(change({ kind: 'enroll', member: 'site-3', kemKey: kem(6), fromRound: 6 }), 6, true);
    expect(view.keyFor('site-3', 5)).toBeUndefined();
    expect(view.keyFor('site-3', 6)!.keyId).toBe(falcon(11).keyId);
  });

  it('refuses what breaks the rules, leaving the view unchanged', () => {
    const view = base();
    expect(errorCode(() => view.apply(change({ fromRound: 2 }), 3, true))).toBe('REGISTRY_CHANGE_REFUSED');
    expect(view.problem(change({ fromRound: 5 }), 3, false)).toBeNull(); // a request for a later round
    expect(view.problem(change({ fromRound: 2 }), 3, false)).toMatch(/past/);
    expect(view.problem(change({ member: 'coordinator', role: 'coordinator' }), 3, true)).toMatch(
      /signs the log/,
    );
    expect(view.problem(change({ member: 'site-9' }), 3, true)).toMatch(/not in the registry/);
    expect(view.problem(change({ role: 'aggregator' }), 3, true)).toMatch(/it is a site/);
    expect(view.problem(change({ signingKey: toPublicSigningKey(keys['site-1']) }), 3, true)).toMatch(
      /already used/,
    );
    expect(view.problem(change({ federation: 'other' }), 3, true)).toMatch(/federation/);
    expect(view.changes).toEqual([]);
    expect(view.keyFor('site-1', 9)!.keyId).toBe(keys['site-1'].keyId);
  });
});

/**
 * SHA-256 of the `MemberRegistry` encoding of {@link registry} (seeded keys): the encoding must
 * never change, or every pinned registry file would need re-issuing.
 */
const KAT_BODY_SHA256 = '888455752163eda5b8edf53ef66b4f2e284eb2e78e5a788081378af5105dd6e5';
