import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DataError, encodeNpy, loadNpyDataset, parseNpy, readNpy } from '../../src/data/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-npy-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function write(name: string, bytes: Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

function thrown(fn: () => unknown): DataError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(DataError);
    return e as DataError;
  }
  throw new Error('expected a DataError');
}

const ascii = (s: string) => Array.from(s, (c) => c.charCodeAt(0));

/**
 * A `.npy` file byte by byte, as numpy 1.x/2.x writes it: the magic `93 4e 55 4d 50 59`
 * ("\x93NUMPY"), the version (major, minor), the header length (u16 LE for 1.0, u32 LE for 2.0 and
 * 3.0), the header dict padded with spaces and ended by "\n" so that magic + version + length +
 * header is a multiple of 64 bytes, then the raw little-endian values.
 *
 * Checked against `np.save(io.BytesIO(), np.array([[1.5, -2], [0.25, 3]], dtype='<f4'))`, which
 * gives 144 bytes: `93 4e 55 4d 50 59 01 00 76 00`, the 118-byte header
 * `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }` + 57 spaces + `\n`, then
 * `00 00 c0 3f 00 00 00 c0 00 00 80 3e 00 00 40 40`. Version (2, 0) and (3, 0) headers of
 * `np.lib.format.write_array` start `93 4e 55 4d 50 59 02 00 74 00 00 00` (a u32 length, 116).
 */
function npyBytes(version: 1 | 2 | 3, dict: string, data: number[], align = 64): Uint8Array {
  const pre = version === 1 ? 10 : 12;
  const pad = (align - ((pre + dict.length + 1) % align)) % align;
  const header = `${dict}${' '.repeat(pad)}\n`;
  const len =
    version === 1
      ? [header.length & 0xff, header.length >> 8]
      : [header.length & 0xff, (header.length >> 8) & 0xff, 0, 0];
  return Uint8Array.from([0x93, ...ascii('NUMPY'), version, 0, ...len, ...ascii(header), ...data]);
}

const F4_2X2 = [
  0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x00, 0x80, 0x3e, 0x00, 0x00, 0x40, 0x40,
];
const DICT_F4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";

describe('readNpy: known answers', () => {
  it('reads numpy’s own bytes for a 2×2 <f4 array (format 1.0)', () => {
    const bytes = npyBytes(1, DICT_F4, F4_2X2);
    expect(bytes.length).toBe(144);
    expect(Array.from(bytes.subarray(0, 10))).toEqual([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, 0x76, 0]);
    const a = readNpy(write('f4.npy', bytes));
    expect(a.shape).toEqual([2, 2]);
    expect(a.dtype).toBe('<f4');
    expect(Array.from(a.data)).toEqual([1.5, -2, 0.25, 3]);
    // encodeNpy writes exactly numpy's bytes.
    expect(Array.from(encodeNpy([2, 2], '<f4', [1.5, -2, 0.25, 3]))).toEqual(Array.from(bytes));
  });

  it('reads format 2.0 and 3.0 headers (u32 length)', () => {
    for (const v of [2, 3] as const) {
      const bytes = npyBytes(
        v,
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
        [0, 0, 0, 0, 0, 0, 0, 0],
      );
      expect(Array.from(bytes.subarray(6, 12))).toEqual([v, 0, 0x74, 0, 0, 0]);
      expect(bytes.length).toBe(136);
      const a = parseNpy(bytes, `v${v}.npy`);
      expect(a.shape).toEqual([2]);
      expect(Array.from(a.data)).toEqual([0, 0]);
    }
  });

  it('reads every supported dtype', () => {
    // <f8 1.5 = 00 00 00 00 00 00 f8 3f; <i4 -1 = ff ff ff ff; <i8 7 = 07 00 … 00; |i1 -2 = fe.
    const cases: [string, number[], number[]][] = [
      ['<f8', [0, 0, 0, 0, 0, 0, 0xf8, 0x3f], [1.5]],
      ['|u1', [0, 1, 255], [0, 1, 255]],
      ['|i1', [0xfe, 0x7f], [-2, 127]],
      ['<i4', [0xff, 0xff, 0xff, 0xff, 3, 0, 0, 0], [-1, 3]],
      ['<i8', [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 7, 0, 0, 0, 0, 0, 0, 0], [-1, 7]],
    ];
    for (const [descr, data, want] of cases) {
      const dict = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${want.length},), }`;
      expect(Array.from(parseNpy(npyBytes(1, dict, data), descr).data)).toEqual(want);
      expect(Array.from(encodeNpy([want.length], descr as '<f8', want))).toEqual(
        Array.from(npyBytes(1, dict, data)),
      );
    }
  });

  it('accepts a scalar shape (), a 3-d shape, double quotes and the old 16-byte alignment', () => {
    expect(
      parseNpy(npyBytes(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (), }", [9]), 's').shape,
    ).toEqual([]);
    const a = parseNpy(
      npyBytes(1, '{"shape": (1, 1, 2), "fortran_order": False, "descr": "|u1"}', [4, 5], 16),
      'old.npy',
    );
    expect(a.shape).toEqual([1, 1, 2]);
    expect(Array.from(a.data)).toEqual([4, 5]);
  });
});

describe('readNpy: refusals', () => {
  const good = npyBytes(1, DICT_F4, F4_2X2);

  it('a missing file', () => {
    expect(thrown(() => readNpy(join(dir, 'nope.npy'))).code).toBe('DATA_FILE_MISSING');
  });

  it('wrong magic and unknown version', () => {
    const e = thrown(() => parseNpy(Uint8Array.from([0x50, 0x4b, 3, 4, 0, 0, 0, 0, 0, 0, 0]), 'x.npy'));
    expect(e.code).toBe('DATA_FORMAT');
    expect(e.message).toMatch(/^x\.npy, field "magic": not a \.npy file: starts with 50 4b 03 04/);
    const v4 = good.slice();
    v4[6] = 4;
    expect(thrown(() => parseNpy(v4, 'x.npy')).message).toMatch(/field "version": format version 4\.0/);
  });

  it('a truncated header and truncated data', () => {
    expect(thrown(() => parseNpy(good.subarray(0, 60), 't.npy')).message).toMatch(
      /field "header": truncated: header needs 128 bytes, file has 60/,
    );
    const e = thrown(() => parseNpy(good.subarray(0, 140), 't.npy'));
    expect(e.message).toMatch(/field "data": truncated: shape \(2, 2\) of <f4 needs 144 bytes/);
    expect(e.details).toMatchObject({ expected: 144, actual: 140 });
  });

  it('shape and size mismatch (trailing bytes, or a shape larger than the data)', () => {
    expect(thrown(() => parseNpy(Uint8Array.from([...good, 0]), 'm.npy')).message).toMatch(/trailing bytes/);
    const huge = npyBytes(
      1,
      "{'descr': '<f8', 'fortran_order': False, 'shape': (100000000, 1000000), }",
      F4_2X2,
    );
    expect(thrown(() => parseNpy(huge, 'h.npy')).message).toMatch(/field "data": truncated/);
  });

  it('bad headers: eval-able code, unknown keys, missing keys, a bare (3) shape', () => {
    const bad = [
      [
        "{'descr': __import__('os').system('x'), 'fortran_order': False, 'shape': (1,), }",
        /unsupported value/,
      ],
      ["{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1, }", /unsupported value/],
      ["{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 'y', }", /unexpected key "x"/],
      ["{'descr': '<f4', 'fortran_order': False, }", /field "shape": the header has no shape tuple/],
      ["{'descr': '<f4', 'fortran_order': False, 'shape': (4), }", /one-element shape/],
      ["{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", /non-negative integer/],
      ["{'descr': '<f4', 'fortran_order': False, 'shape': (4,), } junk", /unexpected text/],
      ["{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }", /unsupported value/],
    ] as const;
    for (const [dict, re] of bad) {
      const e = thrown(() => parseNpy(npyBytes(1, dict, F4_2X2), 'b.npy'));
      expect(e.code).toBe('DATA_FORMAT');
      expect(e.message).toMatch(re);
    }
  });

  it('big-endian, object and other dtypes; Fortran order', () => {
    const dict = (descr: string, fortran = 'False') =>
      `{'descr': '${descr}', 'fortran_order': ${fortran}, 'shape': (2, 2), }`;
    expect(thrown(() => parseNpy(npyBytes(1, dict('>f4'), F4_2X2), 'be.npy')).message).toMatch(
      /^be\.npy, field "descr": ">f4": big-endian data is not supported/,
    );
    expect(thrown(() => parseNpy(npyBytes(1, dict('|O'), F4_2X2), 'o.npy')).message).toMatch(/object arrays/);
    expect(thrown(() => parseNpy(npyBytes(1, dict('<c8'), F4_2X2), 'c.npy')).message).toMatch(
      /not supported/,
    );
    expect(thrown(() => parseNpy(npyBytes(1, dict('<f4', 'True'), F4_2X2), 'f.npy')).message).toMatch(
      /field "fortran_order": Fortran-order/,
    );
  });

  it('NaN, infinity and beyond-float32 values name the first bad index', () => {
    const nan = parseNpyError(encodeNpy([2, 2], '<f4', [0, 1, Number.NaN, Number.NaN]));
    expect(nan.code).toBe('DATA_NON_FINITE');
    expect(nan.message).toMatch(/^n\.npy, field "data\[1, 0\]": value NaN at flat index 2 is not finite/);
    const big = parseNpyError(encodeNpy([3], '<f8', [0, 1e300, 0]));
    expect(big.message).toMatch(/field "data\[1\]": value 1e\+300 at flat index 1 is beyond float32 range/);
  });
});

function parseNpyError(bytes: Uint8Array): DataError {
  return thrown(() => parseNpy(bytes, 'n.npy'));
}

describe('loadNpyDataset', () => {
  const x = write('x.npy', encodeNpy([3, 2, 2], '|u1', [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]));
  const y = write('y.npy', encodeNpy([3], '<i8', [0, 2, 1]));

  it('flattens [n, h, w] features and reads integer labels', () => {
    const d = loadNpyDataset(x, y, { classCount: 3 });
    expect(d.count).toBe(3);
    expect(d.featureCount).toBe(4);
    expect(Array.from(d.labels)).toEqual([0, 2, 1]);
    expect(Array.from(d.features.subarray(4, 8))).toEqual([5, 6, 7, 8]);
  });

  it('refuses labels out of range, count mismatches and wrong ranks', () => {
    const e = thrown(() => loadNpyDataset(x, y, { classCount: 2 }));
    expect(e.code).toBe('DATA_LABEL_RANGE');
    expect(e.message).toBe(`${y}, field "label[1]": label 2 is not an integer in [0, 2)`);
    const frac = write('yf.npy', encodeNpy([3], '<f4', [0, 0.5, 1]));
    expect(thrown(() => loadNpyDataset(x, frac, { classCount: 3 })).message).toMatch(/label 0\.5/);
    const y2 = write('y2.npy', encodeNpy([2], '|u1', [0, 1]));
    expect(thrown(() => loadNpyDataset(x, y2, { classCount: 3 })).code).toBe('DATA_SHAPE');
    expect(thrown(() => loadNpyDataset(y, y, { classCount: 3 })).message).toMatch(/features need shape/);
    expect(thrown(() => loadNpyDataset(x, x, { classCount: 3 })).message).toMatch(/labels need shape \[n\]/);
  });
});
