import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  DataError,
  encodeIdx,
  readIdx,
  readMnistIdx,
  readNpy,
  splitSites,
  writeDataFiles,
  writeIdx,
  writeNpy,
} from '../../src/data/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-write-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const mode = (file: string) => statSync(file).mode & 0o777;

function thrown(fn: () => unknown): DataError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(DataError);
    return e as DataError;
  }
  throw new Error('expected a DataError');
}

describe('IDX and .npy writers', () => {
  const pixels = Uint8Array.from({ length: 4 * 3 * 2 }, (_, i) => (i * 37) % 256);

  it('writes gzip IDX that reads back to the same bytes, 0644, folders created', () => {
    const path = join(dir, 'a/b/images-idx3-ubyte.gz');
    writeIdx(path, [4, 3, 2], pixels);
    const raw = readFileSync(path);
    expect([raw[0], raw[1]]).toEqual([0x1f, 0x8b]);
    expect(mode(path)).toBe(0o644);
    const back = readIdx(path);
    expect(back.dims).toEqual([4, 3, 2]);
    expect(Array.from(back.data)).toEqual(Array.from(pixels));
  });

  it('writes plain IDX byte for byte as encodeIdx', () => {
    const path = join(dir, 'plain-idx1-ubyte');
    writeIdx(path, [24], pixels);
    expect(new Uint8Array(readFileSync(path))).toEqual(encodeIdx([24], pixels));
  });

  it('writes .npy that reads back to the same values for each dtype', () => {
    const cases = [
      ['<f4', [0.5, -1.25, 3, 1e-3]],
      ['<f8', [0.5, -1.25, 3, 7]],
      ['|u1', [0, 1, 255, 9]],
      ['|i1', [-128, 0, 127, 5]],
      ['<i4', [-5, 2 ** 30, 0, 1]],
      ['<i8', [-5, 2 ** 40, 0, 1]],
    ] as const;
    for (const [dtype, values] of cases) {
      const path = join(dir, `x-${dtype.slice(1)}.npy`);
      writeNpy(path, [2, 2], dtype, values);
      const back = readNpy(path);
      expect(back.shape).toEqual([2, 2]);
      expect(back.dtype).toBe(dtype);
      expect(Array.from(back.data)).toEqual(values.map((v) => Math.fround(v)));
      expect(mode(path)).toBe(0o644);
    }
  });

  it('refuses to overwrite without force, writing none of the batch', () => {
    const old = join(dir, 'old.npy');
    writeFileSync(old, 'keep');
    const fresh = join(dir, 'fresh.npy');
    const e = thrown(() =>
      writeDataFiles([
        { path: fresh, bytes: new Uint8Array([1]) },
        { path: old, bytes: new Uint8Array([2]) },
      ]),
    );
    expect(e.code).toBe('DATA_FILE_EXISTS');
    expect(e.message).toContain(old);
    expect(() => statSync(fresh)).toThrow();
    expect(readFileSync(old, 'utf8')).toBe('keep');
    writeNpy(old, [1], '|u1', [7], { force: true });
    expect(Array.from(readNpy(old).data)).toEqual([7]);
    expect(mode(old)).toBe(0o644);
  });

  it('names the file it cannot write', () => {
    const blocker = join(dir, 'blocker');
    writeFileSync(blocker, '');
    const e = thrown(() => writeIdx(join(blocker, 'x-idx1-ubyte'), [1], new Uint8Array([0])));
    expect(e.code).toBe('DATA_FILE_UNWRITABLE');
    expect(e.message).toContain(join(blocker, 'x-idx1-ubyte'));
  });
});

describe('splitSites', () => {
  const mnist = readMnistIdx(300);

  it('writes one folder per site covering every row once, deterministic for a seed', () => {
    const run = (out: string, seed: number) =>
      splitSites(mnist.train, undefined, {
        out,
        sites: 3,
        partition: { kind: 'dirichlet', alpha: 0.5 },
        seed,
        format: 'npy',
        classCount: 10,
      });
    const a = run(join(dir, 'split-a'), 7);
    run(join(dir, 'split-b'), 7);
    run(join(dir, 'split-c'), 8);
    expect(a.sites.map((s) => s.rows).reduce((x, y) => x + y, 0)).toBe(300);
    const hist = new Array<number>(10).fill(0);
    for (const s of a.sites) {
      s.histogram.forEach((n, y) => {
        hist[y]! += n;
      });
    }
    const want = new Array<number>(10).fill(0);
    for (const y of mnist.train.labels.data) want[y]!++;
    expect(hist).toEqual(want);
    const bytes = (out: string) => readFileSync(join(dir, out, 'site-1/features.npy'));
    expect(bytes('split-a').equals(bytes('split-b'))).toBe(true);
    expect(bytes('split-a').equals(bytes('split-c'))).toBe(false);
    const x = readNpy(join(dir, 'split-a/site-0/features.npy'));
    expect(x.shape).toEqual([a.sites[0]!.rows, 28, 28]);
  });

  it('refuses an existing split unless forced', () => {
    const opts = {
      out: join(dir, 'split-idx'),
      sites: 2,
      partition: { kind: 'iid' } as const,
      seed: 1,
      format: 'idx' as const,
      classCount: 10,
    };
    splitSites(mnist.train, undefined, opts);
    expect(thrown(() => splitSites(mnist.train, undefined, opts)).code).toBe('DATA_FILE_EXISTS');
    const r = splitSites(mnist.train, undefined, { ...opts, force: true });
    expect(readIdx(join(opts.out, 'site-0/train-labels-idx1-ubyte.gz')).dims).toEqual([r.sites[0]!.rows]);
  });
});
