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
import { loadKemKeyPair, loadKemPublicKey, unwrapSecret, wrapSecret } from '../../crypto/kem/index.ts';
import {
  CKKS_KEY_PURPOSE,
  DATA_KEY_PURPOSE,
  loadSiteCkks,
  loadSiteDataKey,
  runKeyCeremony,
} from '../../src/services/key-ceremony.ts';
import { errorCode } from '../helpers/error-code.ts';

const FED = 'demo-federation';
const SITES = ['site-a', 'site-b', 'site-c'];
const root = mkdtempSync(join(tmpdir(), 'cohort-ceremony-'));
const dir = join(root, 'keys');
let ckks: CkksContext;

afterAll(() => rmSync(root, { recursive: true, force: true }));

beforeAll(async () => {
  ckks = await getCkksContext(DEFAULT_CKKS_PARAMS);
  runKeyCeremony({
    dir,
    federation: FED,
    coordinator: 'coordinator',
    aggregators: ['agg-1'],
    sites: SITES,
    algorithm: 'falcon-512',
    ckks,
  });
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
    const keys = SITES.map((site) => loadSiteDataKey(dir, site, FED));
    for (const key of keys) expect(key.length).toBe(32);
    expect(new Set(keys.map(hex)).size).toBe(1);
    expect(hex(keys[0]!)).not.toBe('00'.repeat(32));
  });

  it('writes <site>.data.env 0600 for sites only, and never the key in the clear', () => {
    const key = loadSiteDataKey(dir, 'site-a', FED);
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
    const envelopeB = readFileSync(pub(dir, 'site-b.data.env'));
    const envelopeA = readFileSync(pub(dir, 'site-a.data.env'));
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
    expect(errorCode(() => loadSiteDataKey(swapped, 'site-a', FED))).toBe('UNWRAP_FAILED');
    expect(errorCode(() => loadSiteDataKey(dir, 'site-a', 'other-federation'))).toBe('UNWRAP_FAILED');
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
    expect(hex(loadSiteDataKey(other, 'site-a', FED))).not.toBe(hex(loadSiteDataKey(dir, 'site-a', FED)));
  });

  it('leaves the CKKS envelope loadable', () => {
    const keyset = loadSiteCkks(ckks, dir, 'site-c', FED);
    keyset.delete();
  });
});

describe('loadSiteDataKey errors', () => {
  it('KEY_FILE_UNREADABLE for a missing envelope or KEM key', () => {
    const missing = scratch('missing');
    unlinkSync(pub(missing, 'site-a.data.env'));
    expect(errorCode(() => loadSiteDataKey(missing, 'site-a', FED))).toBe('KEY_FILE_UNREADABLE');
    expect(errorCode(() => loadSiteDataKey(dir, 'site-z', FED))).toBe('KEY_FILE_UNREADABLE');
  });

  it('UNWRAP_FAILED for a tampered envelope', () => {
    const tampered = scratch('tampered');
    const path = pub(tampered, 'site-a.data.env');
    const bytes = readFileSync(path);
    bytes[bytes.length - 20]! ^= 1;
    writeFileSync(path, bytes, { mode: 0o600 });
    expect(errorCode(() => loadSiteDataKey(tampered, 'site-a', FED))).toBe('UNWRAP_FAILED');
  });

  it('KEY_INVALID for an envelope that does not hold 32 bytes', () => {
    const short = scratch('short');
    const envelope = wrapSecret(loadKemPublicKey(pub(short, 'site-a.kem.pub')), new Uint8Array(16).fill(7), {
      federation: FED,
      recipient: 'site-a',
      purpose: DATA_KEY_PURPOSE,
    });
    writeFileSync(pub(short, 'site-a.data.env'), envelope, { mode: 0o600 });
    expect(errorCode(() => loadSiteDataKey(short, 'site-a', FED))).toBe('KEY_INVALID');
  });

  it('INVALID_ARGUMENT naming an empty argument', () => {
    expect(() => loadSiteDataKey(dir, '', FED)).toThrow(/site must be a non-empty string/);
    expect(() => loadSiteDataKey(dir, 'site-a', '')).toThrow(/federation must be a non-empty string/);
  });
});
