import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  denseWidths,
  FEDAVG_CNN,
  MNIST_2NN,
  type ModelSpec,
  mlp,
  parameterCount,
} from '../../federation/index.ts';
import { InvalidArgumentError } from '../../src/errors/index.ts';
import {
  decodeSafetensors,
  encodeSafetensors,
  layerTensorNames,
  modelTensors,
  parametersFromTensors,
  SAFETENSORS_MAX_HEADER_BYTES,
  SafetensorsError,
  type SafetensorsErrorCode,
  type SafetensorsTensor,
} from '../../src/versions/index.ts';
import { rng } from '../helpers/rng.ts';

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

/** A safetensors file built by hand: u64 LE `declared` (default: the header's length), header, data. */
function rawFile(header: string, data: ArrayLike<number> = [], declared?: bigint): Uint8Array {
  const json = utf8(header);
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, declared ?? BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

function bytesOf(values: Float32Array): number[] {
  return Array.from(new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
}

function expectSafetensorsError(fn: () => unknown, code: SafetensorsErrorCode, message: RegExp): void {
  let thrown: unknown;
  try {
    fn();
  } catch (e) {
    thrown = e;
  }
  expect(thrown).toBeInstanceOf(SafetensorsError);
  expect((thrown as SafetensorsError).code).toBe(code);
  expect((thrown as SafetensorsError).message).toMatch(message);
}

function randomParameters(spec: ModelSpec, seed: number): Float32Array {
  const next = rng(seed);
  const out = new Float32Array(parameterCount(spec));
  for (let i = 0; i < out.length; i++) out[i] = next() * 2 - 1;
  return out;
}

describe('encodeSafetensors known answers', () => {
  it('one tensor "a" F32 [2] = [1, -2] with metadata {k: v}', () => {
    // Header JSON, compact, tensors then __metadata__: 79 bytes, padded with one space to 80.
    const json = '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{"k":"v"}}';
    expect(json.length).toBe(79);
    const expected = [
      ...[80, 0, 0, 0, 0, 0, 0, 0], // u64 LE header length
      ...Array.from(json, (c) => c.charCodeAt(0)),
      0x20, // padding to a multiple of 8
      ...[0x00, 0x00, 0x80, 0x3f], // 1.0f  = 0x3f800000, little-endian
      ...[0x00, 0x00, 0x00, 0xc0], // -2.0f = 0xc0000000, little-endian
    ];
    expect(expected.length).toBe(8 + 80 + 8);
    const bytes = encodeSafetensors(
      [{ name: 'a', dtype: 'F32', shape: [2], data: new Float32Array([1, -2]) }],
      {
        k: 'v',
      },
    );
    expect(Array.from(bytes)).toEqual(expected);
  });

  it('no tensors and no metadata is "{}" padded to 8 bytes', () => {
    expect(Array.from(encodeSafetensors([]))).toEqual([
      8,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      ...utf8('{}'),
      ...utf8('      '),
    ]);
    // An empty metadata map is omitted, not written as {}.
    expect(encodeSafetensors([], {})).toEqual(encodeSafetensors([]));
  });

  it('lays tensors out in the order given, metadata keys sorted, scalars and empty tensors included', () => {
    const bytes = encodeSafetensors(
      [
        { name: 'z', dtype: 'F32', shape: [], data: new Float32Array([0.5]) },
        { name: '1', dtype: 'F32', shape: [0, 3], data: new Float32Array(0) },
        { name: 'a', dtype: 'F32', shape: [1, 1], data: new Float32Array([-0]) },
      ],
      { b: '2', a: '1' },
    );
    const header =
      '{"z":{"dtype":"F32","shape":[],"data_offsets":[0,4]},' +
      '"1":{"dtype":"F32","shape":[0,3],"data_offsets":[4,4]},' +
      '"a":{"dtype":"F32","shape":[1,1],"data_offsets":[4,8]},' +
      '"__metadata__":{"a":"1","b":"2"}}';
    const n = Math.ceil(header.length / 8) * 8;
    const expected = [
      ...[n, 0, 0, 0, 0, 0, 0, 0],
      ...utf8(header.padEnd(n, ' ')),
      ...[0x00, 0x00, 0x00, 0x3f], // 0.5f = 0x3f000000
      ...[0x00, 0x00, 0x00, 0x80], // -0.0f = 0x80000000
    ];
    expect(Array.from(bytes)).toEqual(expected);
    const decoded = decodeSafetensors(bytes);
    expect([...decoded.tensors.keys()]).toEqual(['z', '1', 'a']);
    expect(decoded.tensors.get('1')).toEqual({ dtype: 'F32', shape: [0, 3], data: new Float32Array(0) });
    expect(Object.is(decoded.tensors.get('a')!.data[0], -0)).toBe(true);
  });

  it('writes non-ASCII names as UTF-8 and escapes JSON specials', () => {
    const name = 'λ"\\\n→😀';
    const bytes = encodeSafetensors([{ name, dtype: 'F32', shape: [1], data: new Float32Array([3]) }], {
      ü: 'ß',
    });
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    const header = new TextDecoder().decode(bytes.subarray(8, 8 + n));
    expect(header.trimEnd()).toBe(
      `{"λ\\"\\\\\\n→😀":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"__metadata__":{"ü":"ß"}}`,
    );
    const decoded = decodeSafetensors(bytes);
    expect([...decoded.tensors.keys()]).toEqual([name]);
    expect(decoded.metadata).toEqual({ ü: 'ß' });
  });

  it('names that are special to JavaScript objects stay plain names', () => {
    const names = ['__proto__', 'constructor', 'toString', '0', '10'];
    const tensors = names.map((name, i) => ({
      name,
      dtype: 'F32' as const,
      shape: [1],
      data: new Float32Array([i]),
    }));
    const decoded = decodeSafetensors(encodeSafetensors(tensors, { __proto__x: 'a', constructor: 'b' }));
    expect([...decoded.tensors.keys()]).toEqual(names);
    expect(Array.from(decoded.tensors.get('__proto__')!.data)).toEqual([0]);
    expect(Object.keys(decoded.metadata).sort()).toEqual(['__proto__x', 'constructor']);
    expect(decoded.metadata['constructor']).toBe('b');
  });
});

describe('round trips', () => {
  const nameArb = fc
    .oneof(
      fc.string({ minLength: 1, maxLength: 12 }),
      fc.string({ minLength: 1, maxLength: 6, unit: 'grapheme' }),
    )
    .filter((s) => s !== '__metadata__');
  const tensorArb = fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 3 }).chain((shape) =>
    fc.record({
      shape: fc.constant(shape),
      values: fc.array(fc.float({ noNaN: true, noDefaultInfinity: true }), {
        minLength: shape.reduce((a, d) => a * d, 1),
        maxLength: shape.reduce((a, d) => a * d, 1),
      }),
    }),
  );
  const fileArb = fc.record({
    tensors: fc.uniqueArray(fc.tuple(nameArb, tensorArb), { selector: ([name]) => name, maxLength: 6 }),
    metadata: fc.option(fc.dictionary(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' })), {
      nil: undefined,
    }),
  });

  it('decode(encode(x)) is x, padded to 8, deterministic and canonical', () => {
    fc.assert(
      fc.property(fileArb, ({ tensors: raw, metadata }) => {
        const tensors: SafetensorsTensor[] = raw.map(([name, { shape, values }]) => ({
          name,
          dtype: 'F32',
          shape,
          data: new Float32Array(values),
        }));
        const bytes = encodeSafetensors(tensors, metadata);
        const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
        expect(n % 8).toBe(0);
        expect((8 + n) % 8).toBe(0);
        const dataBytes = tensors.reduce((a, t) => a + t.data.byteLength, 0);
        expect(bytes.length).toBe(8 + n + dataBytes);
        // Padding is spaces only, after the JSON.
        const header = new TextDecoder().decode(bytes.subarray(8, 8 + n));
        expect(header.length - header.trimEnd().length).toBeLessThan(8);
        expect(/^[ ]*$/.test(header.slice(header.trimEnd().length))).toBe(true);

        const decoded = decodeSafetensors(bytes);
        // Data order; empty tensors at the same offset come back in name order.
        const offsets = new Map<string, number>();
        let at = 0;
        for (const t of tensors) {
          offsets.set(t.name, at);
          at += t.data.byteLength;
        }
        const order = tensors
          .map((t) => [offsets.get(t.name)!, t.data.length, t.name] as const)
          .sort((x, y) => x[0] - y[0] || x[1] - y[1] || (x[2] < y[2] ? -1 : x[2] > y[2] ? 1 : 0))
          .map((x) => x[2]);
        expect([...decoded.tensors.keys()]).toEqual(order);
        for (const t of tensors) {
          const d = decoded.tensors.get(t.name)!;
          expect(d.dtype).toBe('F32');
          expect(d.shape).toEqual(t.shape);
          expect(bytesOf(d.data)).toEqual(bytesOf(t.data));
        }
        expect(decoded.metadata).toEqual(metadata ?? {});

        expect(encodeSafetensors(tensors, metadata)).toEqual(bytes);
        // Re-encoding what was read gives the same bytes, whatever the metadata's key order.
        const again = [...decoded.tensors].map(([name, d]) => ({
          name,
          dtype: 'F32' as const,
          shape: d.shape,
          data: d.data,
        }));
        const reversed = Object.fromEntries(Object.entries(decoded.metadata).reverse());
        const inOrder = order.map((name) => tensors.find((t) => t.name === name)!);
        expect(encodeSafetensors(again, reversed)).toEqual(encodeSafetensors(inOrder, metadata));
        // So without empty tensors sharing an offset, decode then encode gives the very bytes read.
        if (order.every((name, i) => name === tensors[i]!.name)) {
          expect(encodeSafetensors(again, reversed)).toEqual(bytes);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('decode accepts unpadded headers and other tensor orders (files written elsewhere)', () => {
    const header =
      '{"__metadata__":{"format":"pt"},"b":{"data_offsets":[4,8],"shape":[1],"dtype":"F32"},' +
      '"a":{"shape":[1],"dtype":"F32","data_offsets":[0,4]}}';
    const decoded = decodeSafetensors(rawFile(header, [0, 0, 0x80, 0x3f, 0, 0, 0, 0x40]));
    expect([...decoded.tensors.keys()]).toEqual(['a', 'b']);
    expect(Array.from(decoded.tensors.get('a')!.data)).toEqual([1]);
    expect(Array.from(decoded.tensors.get('b')!.data)).toEqual([2]);
    expect(decoded.metadata).toEqual({ format: 'pt' });
  });

  it('decoded data is a fresh array, and decoding works on a subarray of a larger buffer', () => {
    const bytes = encodeSafetensors([
      { name: 'w', dtype: 'F32', shape: [3], data: new Float32Array([1, 2, 3]) },
    ]);
    const big = new Uint8Array(bytes.length + 5);
    big.set(bytes, 3);
    const decoded = decodeSafetensors(big.subarray(3, 3 + bytes.length));
    const data = decoded.tensors.get('w')!.data;
    expect(Array.from(data)).toEqual([1, 2, 3]);
    data[0] = 9;
    expect(Array.from(decodeSafetensors(bytes).tensors.get('w')!.data)).toEqual([1, 2, 3]);
    expect(big[3 + bytes.length - 12]).toBe(0); // first byte of 1.0f
  });
});

describe('decodeSafetensors refusals', () => {
  const a = '"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}';
  const eight = [0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0];

  it('is fine on the well-formed control file', () => {
    expect(Array.from(decodeSafetensors(rawFile(`{${a}}`, eight)).tensors.get('a')!.data)).toEqual([1, -2]);
  });

  it('refuses a buffer shorter than the length prefix', () => {
    expectSafetensorsError(() => decodeSafetensors(new Uint8Array(7)), 'SAFETENSORS_TRUNCATED', /7 bytes/);
  });

  it('refuses a header length beyond the buffer', () => {
    const ok = rawFile(`{${a}}`, eight);
    expectSafetensorsError(
      () => decodeSafetensors(ok.subarray(0, 20)),
      'SAFETENSORS_TRUNCATED',
      /header length 54 runs past the end of the 20-byte file/,
    );
    expectSafetensorsError(
      () => decodeSafetensors(rawFile('{}', [], 3n)),
      'SAFETENSORS_TRUNCATED',
      /header length 3 runs past/,
    );
  });

  it('refuses a header length beyond maxHeaderBytes before decoding anything', () => {
    // 2^64 − 1 declared on an 8-byte buffer: refused by the cap, no allocation, no parsing.
    const huge = new Uint8Array(8).fill(0xff);
    expectSafetensorsError(
      () => decodeSafetensors(huge),
      'SAFETENSORS_HEADER_TOO_LARGE',
      new RegExp(`18446744073709551615 exceeds the limit of ${SAFETENSORS_MAX_HEADER_BYTES}`),
    );
    const ok = rawFile(`{${a}}`, eight);
    expect(decodeSafetensors(ok, { maxHeaderBytes: 54 }).tensors.size).toBe(1);
    expectSafetensorsError(
      () => decodeSafetensors(ok, { maxHeaderBytes: 53 }),
      'SAFETENSORS_HEADER_TOO_LARGE',
      /header length 54 exceeds the limit of 53 bytes/,
    );
  });

  it('rejects a bad maxHeaderBytes and a non-Uint8Array', () => {
    expect(() => decodeSafetensors(new Uint8Array(8), { maxHeaderBytes: 1 })).toThrow(InvalidArgumentError);
    expect(() => decodeSafetensors(new Uint8Array(8), { maxHeaderBytes: 2.5 })).toThrow(/maxHeaderBytes/);
    expect(() => decodeSafetensors([0, 0] as unknown as Uint8Array)).toThrow(InvalidArgumentError);
  });

  it('refuses bad JSON, non-UTF-8 and non-object headers', () => {
    expectSafetensorsError(
      () => decodeSafetensors(rawFile(`{${a}`, eight)),
      'SAFETENSORS_HEADER_INVALID',
      /JSON/,
    );
    expectSafetensorsError(
      () => decodeSafetensors(rawFile('{"a":1,}')),
      'SAFETENSORS_HEADER_INVALID',
      /not valid JSON/,
    );
    expectSafetensorsError(
      () => decodeSafetensors(rawFile(`[${a}]`, eight)),
      'SAFETENSORS_HEADER_INVALID',
      /starting with "\{"/,
    );
    expectSafetensorsError(
      () => decodeSafetensors(rawFile(` {${a}}`, eight)),
      'SAFETENSORS_HEADER_INVALID',
      /starting with "\{"/,
    );
    const badUtf8 = rawFile('{"?":1}');
    badUtf8[10] = 0xff;
    expectSafetensorsError(() => decodeSafetensors(badUtf8), 'SAFETENSORS_HEADER_INVALID', /UTF-8/);
    expectSafetensorsError(() => decodeSafetensors(rawFile('')), 'SAFETENSORS_HEADER_INVALID', /\{/);
  });

  it('refuses malformed entries, naming the tensor', () => {
    const cases: [string, RegExp][] = [
      ['{"a":[1]}', /tensor "a": header entry must be an object/],
      [
        '{"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0],"extra":1}}',
        /tensor "a": unexpected field "extra"/,
      ],
      ['{"a":{"shape":[0],"data_offsets":[0,0]}}', /tensor "a": dtype must be a string/],
      ['{"a":{"dtype":"F32","data_offsets":[0,0]}}', /tensor "a": shape must be/],
      ['{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}}', /tensor "a": shape must be/],
      ['{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,0]}}', /tensor "a": shape must be/],
      ['{"a":{"dtype":"F32","shape":[0]}}', /tensor "a": data_offsets must be/],
      ['{"a":{"dtype":"F32","shape":[0],"data_offsets":[0]}}', /tensor "a": data_offsets must be/],
      ['{"a":{"dtype":"F32","shape":[0],"data_offsets":["0","0"]}}', /tensor "a": data_offsets must be/],
      ['{"__metadata__":{"k":1}}', /__metadata__\["k"\] is number; must be a string/],
      ['{"__metadata__":["k"]}', /__metadata__ must be an object/],
    ];
    for (const [header, message] of cases) {
      expectSafetensorsError(() => decodeSafetensors(rawFile(header)), 'SAFETENSORS_HEADER_INVALID', message);
    }
  });

  it('refuses an unsupported dtype, naming tensor and dtype', () => {
    expectSafetensorsError(
      () => decodeSafetensors(rawFile('{"emb":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}}', eight)),
      'SAFETENSORS_DTYPE_UNSUPPORTED',
      /tensor "emb" has dtype "F16"; only F32 is supported/,
    );
    expectSafetensorsError(
      () => decodeSafetensors(rawFile('{"x":{"dtype":"f32","shape":[2],"data_offsets":[0,8]}}', eight)),
      'SAFETENSORS_DTYPE_UNSUPPORTED',
      /tensor "x" has dtype "f32"/,
    );
  });

  it('refuses a shape that disagrees with the offsets', () => {
    expectSafetensorsError(
      () => decodeSafetensors(rawFile('{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}', eight)),
      'SAFETENSORS_SHAPE_MISMATCH',
      /tensor "a": shape \[3\] of F32 needs 12 bytes, data_offsets \[0, 8\] give 8/,
    );
    expectSafetensorsError(
      () => decodeSafetensors(rawFile('{"a":{"dtype":"F32","shape":[],"data_offsets":[0,8]}}', eight)),
      'SAFETENSORS_SHAPE_MISMATCH',
      /tensor "a": shape \[\] of F32 needs 4 bytes/,
    );
    expectSafetensorsError(
      () =>
        decodeSafetensors(
          rawFile('{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}', eight),
        ),
      'SAFETENSORS_SHAPE_MISMATCH',
      /tensor "a"/,
    );
  });

  it('refuses out-of-range offsets', () => {
    expectSafetensorsError(
      () => decodeSafetensors(rawFile('{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}', eight)),
      'SAFETENSORS_OFFSETS_INVALID',
      /tensor "a": data_offsets \[0, 16\] run past the 8-byte data section/,
    );
    expectSafetensorsError(
      () => decodeSafetensors(rawFile('{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}}', eight)),
      'SAFETENSORS_OFFSETS_INVALID',
      /tensor "a": data_offsets \[8, 4\] end before they begin/,
    );
  });

  it('refuses overlapping offsets', () => {
    const header =
      '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}';
    expectSafetensorsError(
      () => decodeSafetensors(rawFile(header, [...eight, 0, 0, 0, 0])),
      'SAFETENSORS_OFFSETS_INVALID',
      /tensor "b": data_offsets \[4, 12\] overlap/,
    );
    const same =
      '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}';
    expectSafetensorsError(
      () => decodeSafetensors(rawFile(same, eight)),
      'SAFETENSORS_OFFSETS_INVALID',
      /tensor "b": data_offsets \[0, 8\] overlap/,
    );
  });

  it('refuses gaps and data the tensors do not cover', () => {
    const gap =
      '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}';
    expectSafetensorsError(
      () => decodeSafetensors(rawFile(gap, [...eight, 0, 0, 0, 0])),
      'SAFETENSORS_OFFSETS_INVALID',
      /tensor "b": data_offsets \[8, 12\] leave bytes 4..8 unused/,
    );
    expectSafetensorsError(
      () => decodeSafetensors(rawFile('{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', eight)),
      'SAFETENSORS_OFFSETS_INVALID',
      /tensor "a": data_offsets \[4, 8\] leave bytes 0..4 unused/,
    );
    expectSafetensorsError(
      () => decodeSafetensors(rawFile('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', eight)),
      'SAFETENSORS_OFFSETS_INVALID',
      /cover 4 of the 8-byte data section/,
    );
    expectSafetensorsError(
      () => decodeSafetensors(rawFile('{}', [1])),
      'SAFETENSORS_OFFSETS_INVALID',
      /cover 0 of the 1-byte/,
    );
  });
});

describe('encodeSafetensors refusals', () => {
  const t = (over: Partial<Record<keyof SafetensorsTensor, unknown>>): SafetensorsTensor =>
    ({ name: 'w', dtype: 'F32', shape: [2], data: new Float32Array([1, 2]), ...over }) as SafetensorsTensor;

  it('rejects bad names', () => {
    expect(() => encodeSafetensors([t({ name: '' })])).toThrow(
      /tensors\[0\]\.name must be a non-empty string/,
    );
    expect(() => encodeSafetensors([t({ name: 3 })])).toThrow(InvalidArgumentError);
    expect(() => encodeSafetensors([t({}), t({})])).toThrow(/tensor "w" appears twice/);
    expect(() => encodeSafetensors([t({ name: '__metadata__' })])).toThrow(/__metadata__ is reserved/);
    expect(() => encodeSafetensors([t({ name: 'x\uD800' })])).toThrow(/lone surrogate/);
  });

  it('rejects a dtype other than F32, bad shapes and data', () => {
    expect(() => encodeSafetensors([t({ dtype: 'F16' })])).toThrow(/tensor "w": dtype F16 is not supported/);
    expect(() => encodeSafetensors([t({ shape: [3] })])).toThrow(
      /tensor "w": shape \[3\] holds 3 values, data has 2/,
    );
    expect(() => encodeSafetensors([t({ shape: [2, -1] })])).toThrow(
      /tensor "w" shape\[1\] must be an integer/,
    );
    expect(() => encodeSafetensors([t({ shape: [0.5, 4] })])).toThrow(/shape\[0\]/);
    expect(() => encodeSafetensors([t({ shape: 2 })])).toThrow(/shape must be an array/);
    expect(() => encodeSafetensors([t({ data: [1, 2] })])).toThrow(/data must be a Float32Array/);
    expect(() => encodeSafetensors([t({ data: new Float32Array([1, Number.NaN]) })])).toThrow(
      /tensor "w": data\[1\] is NaN; every value must be finite/,
    );
    expect(() => encodeSafetensors([t({ data: new Float32Array([-Infinity, 0]) })])).toThrow(
      /data\[0\] is -Infinity/,
    );
    expect(() => encodeSafetensors('w' as unknown as SafetensorsTensor[])).toThrow(
      /tensors must be an array/,
    );
  });

  it('rejects bad metadata', () => {
    expect(() => encodeSafetensors([], { k: 1 } as unknown as Record<string, string>)).toThrow(
      /metadata\["k"\] is number; must be a string/,
    );
    expect(() => encodeSafetensors([], ['x'] as unknown as Record<string, string>)).toThrow(
      /metadata must be/,
    );
    expect(() => encodeSafetensors([], { k: '\uDC00' })).toThrow(/lone surrogate/);
    for (const bad of [
      () => encodeSafetensors([t({ name: '' })]),
      () => encodeSafetensors([], { k: 1 } as unknown as Record<string, string>),
    ]) {
      expect(bad).toThrow(InvalidArgumentError);
    }
  });
});

describe('model tensors', () => {
  it('names the 2NN as layers.0/2/4 with PyTorch shapes', () => {
    const parameters = randomParameters(MNIST_2NN, 7);
    const tensors = modelTensors(MNIST_2NN, parameters);
    expect(tensors.map((x) => [x.name, x.dtype, x.shape])).toEqual([
      ['layers.0.weight', 'F32', [200, 784]],
      ['layers.0.bias', 'F32', [200]],
      ['layers.2.weight', 'F32', [200, 200]],
      ['layers.2.bias', 'F32', [200]],
      ['layers.4.weight', 'F32', [10, 200]],
      ['layers.4.bias', 'F32', [10]],
    ]);
    // W[o][i] of layer 1 is at weightOffset + o·inputs + i in the flat vector.
    const w2 = tensors[2]!.data;
    const offset = 784 * 200 + 200;
    expect(w2[3 * 200 + 5]).toBe(parameters[offset + 3 * 200 + 5]);
    expect(tensors[5]!.data[9]).toBe(parameters[parameters.length - 1]);
    expect(layerTensorNames(2)).toEqual({ weight: 'layers.2.weight', bias: 'layers.2.bias' });
  });

  it("names the FedAvg CNN by its index in spec.layers, with nn.Conv2d's and nn.Linear's shapes", () => {
    const parameters = randomParameters(FEDAVG_CNN, 3);
    const tensors = modelTensors(FEDAVG_CNN, parameters);
    expect(tensors.map((x) => [x.name, x.shape])).toEqual([
      ['layers.0.weight', [32, 1, 5, 5]],
      ['layers.0.bias', [32]],
      ['layers.3.weight', [64, 32, 5, 5]],
      ['layers.3.bias', [64]],
      ['layers.7.weight', [512, 3136]],
      ['layers.7.bias', [512]],
      ['layers.9.weight', [10, 512]],
      ['layers.9.bias', [10]],
    ]);
    // W[f][c][i][j] of the second convolution sits at weightOffset + ((f·32 + c)·5 + i)·5 + j.
    const offset = 32 * 25 + 32;
    expect(tensors[2]!.data[((7 * 32 + 3) * 5 + 2) * 5 + 4]).toBe(
      parameters[offset + ((7 * 32 + 3) * 5 + 2) * 5 + 4],
    );
    const bytes = encodeSafetensors(tensors, { format: 'pt' });
    expect(parametersFromTensors(FEDAVG_CNN, decodeSafetensors(bytes).tensors)).toEqual(parameters);
    const flat = tensors.map((x) => (x.name === 'layers.3.weight' ? { ...x, shape: [64, 800] } : x));
    expect(() => parametersFromTensors(FEDAVG_CNN, flat)).toThrow(
      /tensor "layers.3.weight" has shape \[64, 800\]; model cnn \[conv5x5x32-.*\] expects \[64, 32, 5, 5\]/,
    );
  });

  it('the encoded 2NN data section is the flat vector, and the file round-trips', () => {
    const parameters = randomParameters(MNIST_2NN, 11);
    const bytes = encodeSafetensors(modelTensors(MNIST_2NN, parameters), { format: 'pt' });
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    expect(bytes.length).toBe(8 + n + 199_210 * 4);
    expect(Array.from(bytes.subarray(8 + n, 8 + n + 64))).toEqual(bytesOf(parameters.subarray(0, 16)));
    const back = parametersFromTensors(MNIST_2NN, decodeSafetensors(bytes).tensors);
    expect(back).toEqual(parameters);
  });

  it('parametersFromTensors(modelTensors(x)) is x (property)', () => {
    const specArb = fc
      .tuple(
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.integer({ min: 1, max: 5 }), { maxLength: 3 }),
        fc.integer({ min: 2, max: 5 }),
      )
      .map(([inputs, hidden, classes]) => mlp(inputs, hidden, classes));
    fc.assert(
      fc.property(specArb, fc.integer(), (spec, seed) => {
        const x = randomParameters(spec, seed);
        const tensors = modelTensors(spec, x);
        expect(tensors).toHaveLength(2 * (denseWidths(spec)!.length - 1));
        const back = parametersFromTensors(spec, tensors);
        expect(back).toEqual(x);
        expect(back).not.toBe(x);
        expect(parametersFromTensors(spec, decodeSafetensors(encodeSafetensors(tensors)).tensors)).toEqual(x);
      }),
      { numRuns: 100 },
    );
  });

  it('modelTensors rejects parameters of the wrong length, naming both numbers', () => {
    expect(() => modelTensors(MNIST_2NN, new Float32Array(1000))).toThrow(
      /parameters length 1000, model 2nn \[784-200-200-10\] expects 199210/,
    );
    expect(() => modelTensors(MNIST_2NN, [1] as unknown as Float32Array)).toThrow(InvalidArgumentError);
    expect(() =>
      modelTensors({ name: 'bad', input: [3], layers: [{ type: 'relu' }] }, new Float32Array(3)),
    ).toThrow(InvalidArgumentError);
  });

  it('parametersFromTensors names a missing, misshapen, unexpected or non-finite tensor', () => {
    const spec = mlp(3, [4], 2);
    const tensors = modelTensors(spec, randomParameters(spec, 1));
    const without = tensors.filter((x) => x.name !== 'layers.2.bias');
    expect(() => parametersFromTensors(spec, without)).toThrow(
      /tensor "layers.2.bias" is missing; model mlp \[3-4-2\] needs it with shape \[2\]/,
    );
    const transposed = tensors.map((x) => (x.name === 'layers.0.weight' ? { ...x, shape: [3, 4] } : x));
    expect(() => parametersFromTensors(spec, transposed)).toThrow(
      /tensor "layers.0.weight" has shape \[3, 4\]; model mlp \[3-4-2\] expects \[4, 3\]/,
    );
    const extra = [
      ...tensors,
      { name: 'layers.4.weight', dtype: 'F32' as const, shape: [1], data: new Float32Array(1) },
    ];
    expect(() => parametersFromTensors(spec, extra)).toThrow(
      /tensor "layers.4.weight" is not a parameter of model mlp \[3-4-2\]/,
    );
    expect(() => parametersFromTensors(spec, [...tensors, tensors[0]!])).toThrow(
      /tensor "layers.0.weight" appears twice/,
    );
    const short = tensors.map((x) => (x.name === 'layers.0.bias' ? { ...x, data: new Float32Array(3) } : x));
    expect(() => parametersFromTensors(spec, short)).toThrow(
      /tensor "layers.0.bias" data length 3, shape expects 4/,
    );
    const nan = tensors.map((x) =>
      x.name === 'layers.2.weight' ? { ...x, data: x.data.map(() => Number.NaN) } : x,
    );
    expect(() => parametersFromTensors(spec, nan)).toThrow(/tensor "layers.2.weight": data\[0\] is NaN/);
    const f16 = new Map(tensors.map((x) => [x.name, { ...x, dtype: 'F16' }]));
    expect(() => parametersFromTensors(spec, f16)).toThrow(
      /tensor "layers.0.weight" has dtype F16; expected F32/,
    );
    expect(() => parametersFromTensors(spec, 'x' as unknown as Map<string, SafetensorsTensor>)).toThrow(
      /tensors must be a Map or an array/,
    );
  });
});

/** The first python3 that can `import torch`, or undefined. */
function pythonWithTorch(): string | undefined {
  for (const python of ['python3', '/usr/bin/python3']) {
    const r = spawnSync(python, ['-c', 'import torch'], { stdio: 'ignore', timeout: 120_000 });
    if (r.status === 0) return python;
  }
  return undefined;
}

const PYTHON = pythonWithTorch();

/**
 * Loads the file with `safetensors.torch.load_file` when that package is installed, else reads it
 * by the spec with json + torch.frombuffer; then into a module whose `layers` is
 * nn.Sequential(Linear, ReLU, Linear) with strict=True, and prints the logits of one input.
 */
const TORCH_SCRIPT = `
import json, struct, sys, torch
path, x = sys.argv[1], json.loads(sys.argv[2])
try:
    from safetensors.torch import load_file
    state, loader = load_file(path), "safetensors"
except ImportError:
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    assert meta == {"format": "pt"}, meta
    data = raw[8 + n:]
    state = {k: torch.frombuffer(bytearray(data[v["data_offsets"][0]:v["data_offsets"][1]]), dtype=torch.float32).reshape(v["shape"]) for k, v in header.items() if v["dtype"] == "F32"}
    loader = "torch.frombuffer"
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    def forward(self, x):
        return self.layers(x)
net = Net()
net.load_state_dict(state, strict=True)
with torch.no_grad():
    out = net(torch.tensor([x], dtype=torch.float32))[0].tolist()
print(json.dumps({"loader": loader, "out": out, "w": net.layers[2].weight[1, 3].item()}))
`;

describe('PyTorch interop', () => {
  it.skipIf(PYTHON === undefined)(
    `loads into torch.nn.Sequential and computes the same logits${
      PYTHON === undefined ? ' (SKIPPED: no python3 on this machine can `import torch`)' : ''
    }`,
    () => {
      const spec = mlp(3, [4], 2);
      const parameters = randomParameters(spec, 42);
      const dir = mkdtempSync(join(tmpdir(), 'cohort-safetensors-'));
      try {
        const path = join(dir, 'model.safetensors');
        writeFileSync(path, encodeSafetensors(modelTensors(spec, parameters), { format: 'pt' }));
        const x = [0.5, -1.25, 2];
        const r = spawnSync(PYTHON!, ['-c', TORCH_SCRIPT, path, JSON.stringify(x)], {
          encoding: 'utf8',
          timeout: 120_000,
        });
        expect(r.stderr).not.toMatch(/Traceback/);
        expect(r.status).toBe(0);
        const result = JSON.parse(r.stdout.trim().split('\n').pop()!) as {
          loader: string;
          out: number[];
          w: number;
        };

        // The same forward pass here, from the flat layout: W[o][i] at weightOffset + o·inputs + i.
        const w0 = (o: number, i: number): number => parameters[o * 3 + i]!;
        const b0 = (o: number): number => parameters[12 + o]!;
        const w1 = (o: number, i: number): number => parameters[16 + o * 4 + i]!;
        const b1 = (o: number): number => parameters[24 + o]!;
        const hidden = [0, 1, 2, 3].map((o) =>
          Math.max(0, b0(o) + x.reduce((s, v, i) => s + w0(o, i) * v, 0)),
        );
        const logits = [0, 1].map((o) => b1(o) + hidden.reduce((s, h, i) => s + w1(o, i) * h, 0));

        expect(result.w).toBe(w1(1, 3));
        expect(result.out).toHaveLength(2);
        result.out.forEach((v, o) => {
          expect(v).toBeCloseTo(logits[o]!, 5);
        });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    120_000,
  );
});
