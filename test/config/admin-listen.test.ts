// The admin API serves plain HTTP on a loopback host only (issue 22, break 12), and a members
// section must pin the signed registry: both checked once, when the configuration is validated.
import { describe, expect, it } from 'vitest';
import { isLoopbackHost, parseConfig, plaintextAdminProblem } from '../../src/config/index.ts';

const issues = (input: unknown, options = {}) => {
  try {
    parseConfig(input, options);
    return '';
  } catch (err) {
    return (err as Error).message;
  }
};

describe('isLoopbackHost', () => {
  it('knows loopback addresses from network ones', () => {
    for (const h of [
      '127.0.0.1',
      '127.8.9.10',
      'localhost',
      'LOCALHOST',
      '::1',
      '[::1]',
      '0:0:0:0:0:0:0:1',
      '::ffff:127.0.0.1',
    ]) {
      expect(isLoopbackHost(h), h).toBe(true);
    }
    for (const h of [
      '0.0.0.0',
      '::',
      '10.0.0.1',
      '128.0.0.1',
      'admin.example.org',
      '::ffff:10.0.0.1',
      '',
      '127.0.0.1.nip.io',
    ]) {
      expect(isLoopbackHost(h), h).toBe(false);
    }
  });
});

describe('admin.tls on a network address', () => {
  it('is required, naming admin.tls, unless the loud opt-out is set', () => {
    expect(issues({ federation: { id: 'f' }, admin: { host: '0.0.0.0' } })).toMatch(
      /admin\.tls: required when admin\.host \(0\.0\.0\.0\) is not a loopback address/,
    );
    expect(issues({ federation: { id: 'f' }, admin: { host: 'ops.example.org' } })).toMatch(
      /admin\.tls: required/,
    );
    expect(issues({ federation: { id: 'f' }, admin: {} })).toBe('');
    expect(
      issues({ federation: { id: 'f' }, admin: { host: '0.0.0.0', tls: { cert: 'c', key: 'k' } } }),
    ).toBe('');
    expect(
      issues({ federation: { id: 'f' }, admin: { host: '0.0.0.0', insecurePlaintextOnNetwork: true } }),
    ).toBe('');
    expect(plaintextAdminProblem({ host: '::1' })).toBeNull();
  });
});

describe('members.registry', () => {
  const members = { aggregators: [{ id: 'a' }], sites: [{ id: 's' }] };
  const pin = { path: 'keys/public/registry.bin', sha256: 'ab'.repeat(32) };

  it('is required with a members section, naming the field', () => {
    expect(issues({ federation: { id: 'f' }, members })).toMatch(
      /members\.registry: required: pin the signed member registry/,
    );
    expect(issues({ federation: { id: 'f' }, members: { ...members, registry: pin } })).toBe('');
    expect(issues({ federation: { id: 'f' } })).toBe('');
  });

  it('may be absent only for the bootstrap read of `cohort registry create`', () => {
    expect(issues({ federation: { id: 'f' }, members }, { unpinnedRegistry: true })).toBe('');
  });

  it('takes the shared secrets\u2019 fingerprints as 64 hex characters', () => {
    const good = {
      ...members,
      registry: pin,
      keyFingerprints: { ckks: 'a'.repeat(64), data: 'B'.repeat(64) },
    };
    const shared = { keys: 'shared' as const };
    expect(issues({ federation: { id: 'f' }, crypto: shared, members: good })).toBe('');
    expect(
      issues({
        federation: { id: 'f' },
        crypto: shared,
        members: { ...good, keyFingerprints: { ckks: 'xyz' } },
      }),
    ).toMatch(/members\.keyFingerprints\.ckks: must be 64 hex characters/);
  });

  it('refuses a pinned shared CKKS key under threshold keys, the default, naming crypto.keys', () => {
    // A federation keyed with a shared key whose file never said crypto.keys: told what to set,
    // not left to fail on a threshold key file that was never made.
    const pinned = { ...members, registry: pin, keyFingerprints: { ckks: 'a'.repeat(64) } };
    expect(issues({ federation: { id: 'f' }, members: pinned })).toMatch(
      /crypto\.keys: is threshold \(the default when unset\), but members\.keyFingerprints\.ckks pins a shared CKKS key: .*sets crypto\.keys: shared/,
    );
    expect(issues({ federation: { id: 'f' }, crypto: { keys: 'threshold' }, members: pinned })).toMatch(
      /crypto\.keys: is threshold/,
    );
    expect(issues({ federation: { id: 'f' }, crypto: { keys: 'shared' }, members: pinned })).toBe('');
  });
});
