import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CkksKeyset, DEFAULT_CKKS_PARAMS, getCkksContext } from '../../crypto/ckks/index.ts';
import { errorCode } from '../helpers/error-code.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-ckks-keyset-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('CkksKeyset files', () => {
  it('save then load decrypts what the original encrypted', async () => {
    const ctx = await getCkksContext(DEFAULT_CKKS_PARAMS);
    const original = CkksKeyset.create(ctx);
    const path = join(dir, 'site.ckks');
    original.save(path);
    const ct = original.encrypt(Float64Array.from([1, -2, 3, 1000]));
    original.delete();
    const loaded = CkksKeyset.load(ctx, path);
    try {
      const out = loaded.decrypt(ct);
      expect(Array.from(out.subarray(0, 4), Math.round)).toEqual([1, -2, 3, 1000]);
    } finally {
      loaded.delete();
    }
  });

  it('import takes a Buffer (as readFileSync returns it)', async () => {
    const ctx = await getCkksContext(DEFAULT_CKKS_PARAMS);
    const original = CkksKeyset.create(ctx);
    const path = join(dir, 'buffer.ckks');
    original.save(path);
    original.delete();
    const again = CkksKeyset.import(ctx, readFileSync(path));
    again.delete();
  });

  it('refuses a key file that others may read', async () => {
    const ctx = await getCkksContext(DEFAULT_CKKS_PARAMS);
    const original = CkksKeyset.create(ctx);
    const path = join(dir, 'open.ckks');
    original.save(path);
    original.delete();
    chmodSync(path, 0o644);
    expect(errorCode(() => CkksKeyset.load(ctx, path))).toBe('KEY_FILE_PERMISSIONS');
  });
});
