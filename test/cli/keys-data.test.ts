import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  loadKemKeyPair,
  readSealedEnvelope,
  secretFingerprint,
  unwrapSecret,
} from '../../crypto/kem/index.ts';
import { loadPublicKey } from '../../crypto/signature/index.ts';
import { DATA_KEY_PURPOSE, type EnvelopeTrust, loadSiteDataKey } from '../../src/services/key-ceremony.ts';
import { errorCode } from '../helpers/error-code.ts';
import { cohort } from '../helpers/run-cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-keys-data-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const path = (name: string) => join(dir, name);
const mode = (file: string) => statSync(file).mode & 0o777;
const fed = ['--federation', 'demo-federation'];
/** The site that seals the envelopes (`signer.key`), and a recipient trusting its public key. */
const sealedBy = () => ['--signer', 'site-s', '--signing-key', path('signer.key')];
function trustSigner(federation = 'demo-federation'): EnvelopeTrust {
  const key = loadPublicKey(path('signer.pub'));
  return {
    federation,
    makers: (maker, keyId) => (maker === 'site-s' && keyId === key.keyId ? key : `${maker} is not site-s`),
    fingerprints: {},
  };
}

beforeAll(async () => {
  await ok('keys', 'signing', 'generate', '--out', path('signer'));
});

/** `cohort ...args`, expecting success. */
async function ok(...args: string[]) {
  const r = await cohort(...args);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return r.stdout;
}

function wrap(key: string, recipient: string, kemPub: string, out: string, ...extra: string[]) {
  return cohort(
    'keys',
    'data',
    'wrap',
    '--key',
    key,
    '--recipient',
    recipient,
    '--kem-pub',
    kemPub,
    ...fed,
    ...sealedBy(),
    '--out',
    out,
    ...extra,
  );
}

describe('cohort keys data create', () => {
  it('writes a CDK1 file with 32 fresh key bytes, 0600, printing no key material', async () => {
    const out = await ok('keys', 'data', 'create', '--out', path('fed.data'));
    await ok('keys', 'data', 'create', '--out', path('fed2.data'));
    const bytes = readFileSync(path('fed.data'));
    expect(bytes.length).toBe(36);
    expect(bytes.subarray(0, 4).toString('latin1')).toBe('CDK1');
    expect(mode(path('fed.data'))).toBe(0o600);
    expect(readFileSync(path('fed2.data')).equals(bytes)).toBe(false);
    const key = bytes.subarray(4);
    expect(out).toBe(
      `federation data key (32 bytes): ${path('fed.data')} (0600)\n` +
        `fingerprint: ${secretFingerprint(DATA_KEY_PURPOSE, key)} (members.keyFingerprints.data)\n`,
    );
    expect(out).not.toContain(key.toString('hex').slice(0, 16));
    expect(out).not.toContain(key.toString('base64').slice(0, 12));
  });

  it('refuses to overwrite without --force, replaces (re-forcing 0600) with it', async () => {
    await ok('keys', 'data', 'create', '--out', path('again.data'));
    const before = readFileSync(path('again.data'));
    const r = await cohort('keys', 'data', 'create', '--out', path('again.data'));
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^error \[KEY_FILE_EXISTS\]: refusing to overwrite .*again\.data/);
    expect(readFileSync(path('again.data')).equals(before)).toBe(true);

    chmodSync(path('again.data'), 0o644);
    await ok('keys', 'data', 'create', '--out', path('again.data'), '--force');
    expect(readFileSync(path('again.data')).equals(before)).toBe(false);
    expect(mode(path('again.data'))).toBe(0o600);
  });
});

describe('cohort keys data wrap', () => {
  it("writes the <site>.data.env that loadSiteDataKey opens with the site's KEM key", async () => {
    await ok('keys', 'data', 'create', '--out', path('w.data'));
    await ok('keys', 'kem', 'generate', '--out', path('site-a'));
    const out = await ok(
      'keys',
      'data',
      'wrap',
      '--key',
      path('w.data'),
      '--recipient',
      'site-a',
      '--kem-pub',
      path('site-a.kem.pub'),
      ...fed,
      ...sealedBy(),
      '--out',
      path('site-a.data.env'),
    );
    expect(out).toContain('wrapped federation data key for site site-a of federation demo-federation\n');
    expect(out).toMatch(/recipient kem key: [0-9a-f]{64}\n/);
    expect(out).toMatch(/envelope: .*site-a\.data\.env \(\d+ bytes, 0600\)\n$/);
    expect(out).toContain('sealed by: site-s (key id ');
    expect(mode(path('site-a.data.env'))).toBe(0o600);
    const key = loadSiteDataKey(dir, 'site-a', trustSigner());
    expect(Buffer.from(key).equals(readFileSync(path('w.data')).subarray(4))).toBe(true);

    // Bound to recipient and federation: another site's key or name does not open it.
    await ok('keys', 'kem', 'generate', '--out', path('site-b'));
    const kemB = loadKemKeyPair(path('site-b.kem'));
    const envelope = readSealedEnvelope(readFileSync(path('site-a.data.env'))).inner;
    expect(() =>
      unwrapSecret(kemB.secretKey, envelope, {
        federation: 'demo-federation',
        recipient: 'site-b',
        purpose: DATA_KEY_PURPOSE,
      }),
    ).toThrow(/could not be opened/);
    expect(errorCode(() => loadSiteDataKey(dir, 'site-a', trustSigner('other')))).toBe(
      'ENVELOPE_CONTEXT_MISMATCH',
    );
  });

  it('refuses a file that is not a data key, a key others can read, a missing key and --out = --key', async () => {
    await ok('keys', 'kem', 'generate', '--out', path('r'));
    const notData = await wrap(path('r.kem'), 'site-a', path('r.kem.pub'), path('x.env'));
    expect(notData.status).toBe(2);
    expect(notData.stderr).toMatch(/^error \[KEY_INVALID\]: .*r\.kem is not a federation data key file/);

    writeFileSync(path('loose.data'), Buffer.concat([Buffer.from('CDK1'), Buffer.alloc(32, 5)]), {
      mode: 0o644,
    });
    chmodSync(path('loose.data'), 0o644);
    const loose = await wrap(path('loose.data'), 'site-a', path('r.kem.pub'), path('x.env'));
    expect(loose.status).toBe(2);
    expect(loose.stderr).toMatch(/^error \[KEY_FILE_PERMISSIONS\]/);

    writeFileSync(path('short.data'), Buffer.concat([Buffer.from('CDK1'), Buffer.alloc(31, 5)]), {
      mode: 0o600,
    });
    const short = await wrap(path('short.data'), 'site-a', path('r.kem.pub'), path('x.env'));
    expect(short.status).toBe(2);
    expect(short.stderr).toMatch(/^error \[KEY_INVALID\]/);

    const missing = await wrap(path('nope.data'), 'site-a', path('r.kem.pub'), path('x.env'));
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/^error \[KEY_FILE_UNREADABLE\]: cannot read key file .*nope\.data/);

    await ok('keys', 'data', 'create', '--out', path('same.data'));
    const same = await wrap(path('same.data'), 'site-a', path('r.kem.pub'), path('same.data'), '--force');
    expect(same.status).toBe(2);
    expect(same.stderr).toMatch(/^error \[INVALID_ARGUMENT\]: --out .* is the same file as --key/);
    expect(readFileSync(path('same.data')).length).toBe(36);
    expect(existsSync(path('x.env'))).toBe(false);
  });

  it('refuses to overwrite an envelope without --force', async () => {
    await ok('keys', 'data', 'create', '--out', path('o.data'));
    await ok('keys', 'kem', 'generate', '--out', path('o'));
    await ok(
      ...[
        'keys',
        'data',
        'wrap',
        '--key',
        path('o.data'),
        '--recipient',
        'o',
        '--kem-pub',
        path('o.kem.pub'),
      ],
      ...fed,
      ...sealedBy(),
      '--out',
      path('o.env'),
    );
    const again = await wrap(path('o.data'), 'o', path('o.kem.pub'), path('o.env'));
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/^error \[KEY_FILE_EXISTS\]/);
    const before = readFileSync(path('o.env'));
    const forced = await wrap(path('o.data'), 'o', path('o.kem.pub'), path('o.env'), '--force');
    expect(forced.status).toBe(0);
    expect(readFileSync(path('o.env')).equals(before)).toBe(false);
  });
});
