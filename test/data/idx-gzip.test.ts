import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { DataError, encodeIdx, loadIdxDataset, parseIdx } from '../../src/data/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-idxgz-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function thrown(fn: () => unknown): DataError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(DataError);
    return e as DataError;
  }
  throw new Error('expected a DataError');
}

describe('IDX by path, gzip or not, bounded inflation', () => {
  it('reads a gzipped image/label pair like the plain one', () => {
    const pixels = Uint8Array.from({ length: 5 * 28 * 28 }, (_, i) => (i * 7) % 256);
    const labels = Uint8Array.from([3, 1, 4, 1, 5]);
    const write = (name: string, b: Uint8Array) => {
      writeFileSync(join(dir, name), b);
      return join(dir, name);
    };
    const plain = loadIdxDataset(
      write('i', encodeIdx([5, 28, 28], pixels)),
      write('l', encodeIdx([5], labels)),
    );
    const gz = loadIdxDataset(
      write('i.gz', gzipSync(encodeIdx([5, 28, 28], pixels))),
      write('l.gz', gzipSync(encodeIdx([5], labels))),
    );
    expect(gz).toEqual(plain);
    expect(gz.featureCount).toBe(784);
  });

  it('refuses a gzip file that inflates beyond what its IDX header declares (a gzip bomb)', () => {
    // Header says 4 bytes of data; the stream holds 50 MB of zeros.
    const bomb = gzipSync(
      Buffer.concat([Buffer.from(encodeIdx([4], new Uint8Array(4))), Buffer.alloc(50e6)]),
    );
    expect(bomb.length).toBeLessThan(100_000);
    const e = thrown(() => parseIdx(bomb, 'bomb.idx.gz'));
    expect(e.code).toBe('DATA_FORMAT');
    expect(e.message).toBe(
      'bomb.idx.gz, field "gzip": inflates to more than the 12 bytes its IDX header implies',
    );
  });

  it('still reports truncation, a bad magic and broken gzip data', () => {
    const full = encodeIdx([2, 3], Uint8Array.from([1, 2, 3, 4, 5, 6]));
    expect(thrown(() => parseIdx(gzipSync(full.subarray(0, 14)), 't.gz')).message).toMatch(
      /field "data": truncated: dimensions 2×3 need 18 bytes/,
    );
    expect(thrown(() => parseIdx(gzipSync(Buffer.from('hello world')), 'm.gz')).message).toMatch(
      /field "magic"/,
    );
    const int32 = Uint8Array.from([0, 0, 0x0c, 1, 0, 0, 0, 1, 0, 0, 0, 5]);
    expect(thrown(() => parseIdx(gzipSync(int32), 'i.gz')).message).toMatch(/element type 0x0c \(int32\)/);
    const huge = Uint8Array.from([0, 0, 8, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    expect(thrown(() => parseIdx(gzipSync(huge), 'h.gz')).message).toMatch(
      /field "dimensions": dimensions need \d+ bytes, more than the 1073741824-byte limit/,
    );
    expect(thrown(() => parseIdx(Uint8Array.from([0x1f, 0x8b, 1, 2, 3]), 'g.gz')).message).toMatch(
      /field "gzip": gzip data cannot be inflated/,
    );
  });
});
