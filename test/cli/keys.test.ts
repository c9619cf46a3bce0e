import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadKemKeyPair, loadKemPublicKey, wrapSecret } from '../../crypto/kem/index.ts';
import { loadPublicKey, loadSigningKeyPair } from '../../crypto/signature/index.ts';
import { cohort } from '../helpers/run-cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-keys-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const path = (name: string) => join(dir, name);
const mode = (file: string) => statSync(file).mode & 0o777;

/** `cohort ...args`, expecting success. */
async function ok(...args: string[]) {
  const r = await cohort(...args);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return r.stdout;
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

describe('cohort keys signing generate', () => {
  it('writes <prefix>.key (0600) and <prefix>.pub, printing algorithm and key id', async () => {
    const out = await ok('keys', 'signing', 'generate', '--out', path('site-a'));
    const key = loadSigningKeyPair(path('site-a.key'));
    expect(out).toContain('algorithm: falcon-512\n');
    expect(out).toContain(`key id: ${key.keyId}\n`);
    expect(mode(path('site-a.key'))).toBe(0o600);
    expect(loadPublicKey(path('site-a.pub')).keyId).toBe(key.keyId);
  });

  it('generates ml-dsa-65 keys with --alg', async () => {
    const out = await ok('keys', 'signing', 'generate', '--out', path('dsa'), '--alg', 'ml-dsa-65');
    expect(out).toContain('algorithm: ml-dsa-65\n');
    expect(loadSigningKeyPair(path('dsa.key')).algorithm).toBe('ml-dsa-65');
  });

  it('rejects an unknown algorithm as a usage error', async () => {
    const r = await cohort('keys', 'signing', 'generate', '--out', path('x'), '--alg', 'rsa');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("'rsa' is invalid");
    expect(existsSync(path('x.key'))).toBe(false);
  });

  it('refuses to overwrite without --force, replaces (re-forcing 0600) with it', async () => {
    await ok('keys', 'signing', 'generate', '--out', path('again'));
    const before = readFileSync(path('again.key'));
    const r = await cohort('keys', 'signing', 'generate', '--out', path('again'));
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^error \[KEY_FILE_EXISTS\]: refusing to overwrite .*again\.key/);
    expect(r.stderr).toContain('--force');
    expect(readFileSync(path('again.key')).equals(before)).toBe(true);

    chmodSync(path('again.key'), 0o644);
    const out = await ok('keys', 'signing', 'generate', '--out', path('again'), '--force');
    expect(readFileSync(path('again.key')).equals(before)).toBe(false);
    expect(mode(path('again.key'))).toBe(0o600);
    expect(out).toContain(`key id: ${loadSigningKeyPair(path('again.key')).keyId}`);
  });

  it('writes neither file when only the public one exists', async () => {
    writeFileSync(path('half.pub'), 'x');
    const r = await cohort('keys', 'signing', 'generate', '--out', path('half'));
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^error \[KEY_FILE_EXISTS\]/);
    expect(existsSync(path('half.key'))).toBe(false);
  });
});

describe('cohort keys kem generate', () => {
  it('writes <prefix>.kem (0600) and <prefix>.kem.pub of one ML-KEM-768 pair', async () => {
    const out = await ok('keys', 'kem', 'generate', '--out', path('kem-a'));
    expect(mode(path('kem-a.kem'))).toBe(0o600);
    const pair = loadKemKeyPair(path('kem-a.kem'));
    expect(hex(loadKemPublicKey(path('kem-a.kem.pub')))).toBe(hex(pair.publicKey));
    expect(out).toContain('algorithm: ml-kem-768\n');
    const fingerprint = createHash('sha256')
      .update(readFileSync(path('kem-a.kem.pub')))
      .digest('hex');
    expect(out).toContain(`fingerprint: ${fingerprint}\n`);
  });

  it('refuses to overwrite without --force', async () => {
    const r = await cohort('keys', 'kem', 'generate', '--out', path('kem-a'));
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^error \[KEY_FILE_EXISTS\]/);
    await ok('keys', 'kem', 'generate', '--out', path('kem-a'), '--force');
  });
});

/** The site that seals envelopes in these tests: its id and signing key (`signer.key`, `signer.pub`). */
const sealedBy = () => ['--signer', 'site-s', '--signing-key', path('signer.key')];
/** The unwrapping site trusts the signer's public key, read out of band. */
const trusting = () => ['--signer-pub', path('signer.pub')];

beforeAll(async () => {
  await ok('keys', 'signing', 'generate', '--out', path('signer'));
  await ok('keys', 'signing', 'generate', '--out', path('other-signer'));
});

describe('cohort keys ckks create / wrap / unwrap', () => {
  const fed = ['--federation', 'demo-federation'];

  async function setup(name: string) {
    await ok('keys', 'ckks', 'create', '--out', path(`${name}.ckks`));
    await ok('keys', 'kem', 'generate', '--out', path(`${name}-site-a`));
    await ok('keys', 'kem', 'generate', '--out', path(`${name}-site-b`));
    await ok(
      'keys',
      'ckks',
      'wrap',
      '--key',
      path(`${name}.ckks`),
      '--recipient',
      'site-a',
      '--kem-pub',
      path(`${name}-site-a.kem.pub`),
      ...fed,
      ...sealedBy(),
      '--out',
      path(`${name}.env`),
    );
  }

  it('round-trips the CKKS secret key through an envelope for the right site', async () => {
    const created = await ok('keys', 'ckks', 'create', '--out', path('fed.ckks'));
    expect(created).toMatch(/^params id: [0-9a-f]{16}\n/);
    expect(created).toContain('params: N=8192 q=[60,40,60] scale=2^16 exact=42\n');
    expect(mode(path('fed.ckks'))).toBe(0o600);
    await ok('keys', 'kem', 'generate', '--out', path('fed-site-a'));
    const wrapped = await ok(
      'keys',
      'ckks',
      'wrap',
      '--key',
      path('fed.ckks'),
      '--recipient',
      'site-a',
      '--kem-pub',
      path('fed-site-a.kem.pub'),
      ...fed,
      ...sealedBy(),
      '--out',
      path('fed.env'),
    );
    expect(wrapped).toContain('sealed by: site-s (key id ');
    const fingerprint = /^fingerprint: ([0-9a-f]{64}) \(members\.keyFingerprints\.ckks\)$/m.exec(
      created,
    )?.[1];
    expect(fingerprint).toBeDefined();
    expect(wrapped).toContain(`fingerprint: ${fingerprint}\n`);
    const paramsId = /^params id: ([0-9a-f]{16})$/m.exec(created)?.[1];
    expect(wrapped).toContain(`params id ${paramsId}`);
    expect(mode(path('fed.env'))).toBe(0o600);
    const unwrapped = await ok(
      'keys',
      'ckks',
      'unwrap',
      '--envelope',
      path('fed.env'),
      '--kem',
      path('fed-site-a.kem'),
      '--recipient',
      'site-a',
      ...fed,
      ...trusting(),
      '--out',
      path('fed-at-a.ckks'),
    );
    expect(unwrapped).toContain(`params id ${paramsId}`);
    expect(unwrapped).toContain(`sealed by: site-s\nfingerprint: ${fingerprint}\n`);
    expect(mode(path('fed-at-a.ckks'))).toBe(0o600);
    expect(readFileSync(path('fed-at-a.ckks')).equals(readFileSync(path('fed.ckks')))).toBe(true);
  });

  it('exits 2 naming why for a wrong recipient, kem key, federation, maker or a tampered envelope', async () => {
    await setup('bad');
    const unwrap = (
      kem: string,
      recipient: string,
      envelope = path('bad.env'),
      federation = fed,
      trust = trusting(),
    ) =>
      cohort(
        'keys',
        'ckks',
        'unwrap',
        '--envelope',
        envelope,
        '--kem',
        path(kem),
        '--recipient',
        recipient,
        ...federation,
        ...trust,
        '--out',
        path('bad-out.ckks'),
      );
    const tampered = Buffer.from(readFileSync(path('bad.env')));
    tampered[tampered.length - 100]! ^= 1;
    writeFileSync(path('bad-tampered.env'), tampered, { mode: 0o600 });
    const bare = wrapSecret(loadKemPublicKey(path('bad-site-a.kem.pub')), readFileSync(path('bad.ckks')), {
      federation: 'demo-federation',
      recipient: 'site-a',
      purpose: 'ckks-secret-key',
    });
    writeFileSync(path('bad-bare.env'), bare, { mode: 0o600 });
    for (const [r, code] of [
      [await unwrap('bad-site-a.kem', 'site-b'), 'ENVELOPE_CONTEXT_MISMATCH'],
      [await unwrap('bad-site-b.kem', 'site-a'), 'UNWRAP_FAILED'],
      [
        await unwrap('bad-site-a.kem', 'site-a', path('bad.env'), ['--federation', 'other']),
        'ENVELOPE_CONTEXT_MISMATCH',
      ],
      [await unwrap('bad-site-a.kem', 'site-a', path('bad-tampered.env')), 'ENVELOPE_SIGNATURE_INVALID'],
      [await unwrap('bad-site-a.kem', 'site-a', path('bad-bare.env')), 'ENVELOPE_UNSIGNED'],
      [
        await unwrap('bad-site-a.kem', 'site-a', path('bad.env'), fed, [
          '--signer-pub',
          path('other-signer.pub'),
        ]),
        'ENVELOPE_MAKER_REFUSED',
      ],
      [await unwrap('bad-site-a.kem', 'site-a', path('bad.env'), fed, []), 'INVALID_ARGUMENT'],
    ] as const) {
      expect(r.status).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(new RegExp(`^error \\[${code}\\]: `));
    }
    expect(existsSync(path('bad-out.ckks'))).toBe(false);
    await ok(
      'keys',
      'ckks',
      'unwrap',
      '--envelope',
      path('bad.env'),
      '--kem',
      path('bad-site-a.kem'),
      '--recipient',
      'site-a',
      ...fed,
      ...trusting(),
      '--out',
      path('bad-out.ckks'),
    );
  });

  it('takes CKKS parameters from --config and refuses a key made for other parameters', async () => {
    const cfg = path('exact40.yaml');
    writeFileSync(cfg, 'federation:\n  id: demo-federation\ncrypto:\n  ckks:\n    exactBits: 40\n');
    const created = await ok('keys', 'ckks', 'create', '--out', path('e40.ckks'), '--config', cfg);
    expect(created).toContain('exact=40\n');
    await ok('keys', 'kem', 'generate', '--out', path('e40-site'));
    await ok(
      'keys',
      'ckks',
      'wrap',
      '--key',
      path('e40.ckks'),
      '--recipient',
      'site-a',
      '--kem-pub',
      path('e40-site.kem.pub'),
      ...fed,
      ...sealedBy(),
      '--out',
      path('e40.env'),
    );
    const args = [
      'keys',
      'ckks',
      'unwrap',
      '--envelope',
      path('e40.env'),
      '--kem',
      path('e40-site.kem'),
      '--recipient',
      'site-a',
      ...fed,
      ...trusting(),
      '--out',
      path('e40-out.ckks'),
    ];
    const r = await cohort(...args); // default parameters: exactBits 42
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^error \[CKKS_PARAMS_MISMATCH\]/);
    expect(existsSync(path('e40-out.ckks'))).toBe(false);
    await ok(...args, '--config', cfg);
    expect(readFileSync(path('e40-out.ckks')).equals(readFileSync(path('e40.ckks')))).toBe(true);
  });

  it('surfaces missing files, existing outputs and --set without --config as exit 2', async () => {
    await setup('exists');
    const missing = await cohort(
      'keys',
      'ckks',
      'wrap',
      '--key',
      path('nope.ckks'),
      '--recipient',
      'site-a',
      '--kem-pub',
      path('exists-site-a.kem.pub'),
      ...fed,
      ...sealedBy(),
      '--out',
      path('nope.env'),
    );
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/^error \[KEY_FILE_UNREADABLE\]: cannot read key file .*nope\.ckks/);

    const again = await cohort('keys', 'ckks', 'create', '--out', path('exists.ckks'));
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/^error \[KEY_FILE_EXISTS\]/);
    const before = readFileSync(path('exists.ckks'));
    await ok('keys', 'ckks', 'create', '--out', path('exists.ckks'), '--force');
    expect(readFileSync(path('exists.ckks')).equals(before)).toBe(false);

    const set = await cohort('keys', 'ckks', 'create', '--out', path('set.ckks'), '--set', 'a=b');
    expect(set.status).toBe(2);
    expect(set.stderr).toMatch(/^error \[INVALID_ARGUMENT\]: --set needs --config/);
  });

  it('refuses to wrap a file that is not a CKKS secret key', async () => {
    await ok('keys', 'kem', 'generate', '--out', path('notckks'));
    const r = await cohort(
      'keys',
      'ckks',
      'wrap',
      '--key',
      path('notckks.kem'),
      '--recipient',
      'site-a',
      '--kem-pub',
      path('notckks.kem.pub'),
      ...fed,
      ...sealedBy(),
      '--out',
      path('wrong.env'),
    );
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^error \[KEY_INVALID\]: .* is not a CKKS secret key file/);
    expect(existsSync(path('wrong.env'))).toBe(false);
  });
});

describe('cohort keys show', () => {
  it('describes every kind of key file without printing secret bytes', async () => {
    await ok('keys', 'signing', 'generate', '--out', path('show'));
    await ok('keys', 'kem', 'generate', '--out', path('show'));
    await ok('keys', 'ckks', 'create', '--out', path('show.ckks'));
    await ok(
      'keys',
      'ckks',
      'wrap',
      '--key',
      path('show.ckks'),
      '--recipient',
      'site-a',
      '--kem-pub',
      path('show.kem.pub'),
      '--federation',
      'f',
      ...sealedBy(),
      '--out',
      path('show.env'),
    );
    const signing = loadSigningKeyPair(path('show.key'));
    const kem = loadKemKeyPair(path('show.kem'));
    const ckks = readFileSync(path('show.ckks'));
    const secrets = [signing.secretKey, kem.secretKey.subarray(0, 1152), ckks.subarray(36)];

    const outputs = {
      pub: await ok('keys', 'show', path('show.pub')),
      key: await ok('keys', 'show', path('show.key')),
      kemPub: await ok('keys', 'show', path('show.kem.pub')),
      kem: await ok('keys', 'show', path('show.kem')),
      ckks: await ok('keys', 'show', path('show.ckks')),
      env: await ok('keys', 'show', path('show.env')),
    };
    expect(outputs.pub).toContain('kind: signing public key\n');
    expect(outputs.pub).toContain(`key id: ${signing.keyId}\n`);
    expect(outputs.key).toContain('kind: signing key pair (secret)\nalgorithm: falcon-512\n');
    expect(outputs.key).toContain(`key id: ${signing.keyId}\n`);
    expect(outputs.kemPub).toContain('algorithm: ml-kem-768\n');
    const fingerprint = /fingerprint: ([0-9a-f]{64})/.exec(outputs.kemPub)?.[1];
    expect(fingerprint).toBeDefined();
    expect(outputs.kem).toContain(`fingerprint: ${fingerprint}\n`);
    expect(outputs.ckks).toMatch(/kind: CKKS secret key \(secret\)\nparams id: [0-9a-f]{16}\n/);
    expect(outputs.env).toContain('kind: sealed secret envelope');
    expect(outputs.env).toContain(`made by: site-s (key id ${loadPublicKey(path('signer.pub')).keyId})\n`);
    expect(outputs.env).toMatch(/\nrecipient: site-a\npurpose: ckks-secret-key\n/);

    for (const text of Object.values(outputs)) {
      expect(text.length).toBeLessThan(600);
      for (const secret of secrets) {
        const h = hex(secret);
        for (let i = 0; i + 16 <= 64; i += 16) expect(text).not.toContain(h.slice(i, i + 16));
        expect(text).not.toContain(Buffer.from(secret.subarray(0, 12)).toString('base64'));
      }
    }
  });

  it('refuses a secret file others can read, and a file of unknown kind', async () => {
    await ok('keys', 'signing', 'generate', '--out', path('loose'));
    chmodSync(path('loose.key'), 0o644);
    const loose = await cohort('keys', 'show', path('loose.key'));
    expect(loose.status).toBe(2);
    expect(loose.stdout).toBe('');
    expect(loose.stderr).toMatch(/^error \[KEY_FILE_PERMISSIONS\]/);

    writeFileSync(path('junk'), 'hello world');
    const junk = await cohort('keys', 'show', path('junk'));
    expect(junk.status).toBe(2);
    expect(junk.stderr).toMatch(/^error \[KEY_INVALID\]: .* is not a Cohort key file/);

    const missing = await cohort('keys', 'show', path('absent'));
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/^error \[KEY_FILE_UNREADABLE\]/);
  });
});
