import { DataError } from './data-error.ts';
import { readDataFile } from './read-file.ts';

/** A NumPy array read from a `.npy` file: its shape (outermost first), dtype and values as float32, C order. */
export interface NpyArray {
  readonly shape: readonly number[];
  /** The dtype string of the header, e.g. `<f4`, `|u1`. */
  readonly dtype: NpyDtype;
  readonly data: Float32Array;
}

/** The dtypes {@link parseNpy} reads (little-endian or byte-sized only). */
export type NpyDtype = '<f4' | '<f8' | '|u1' | '|i1' | '<i4' | '<i8';

const ITEM_SIZE: Readonly<Record<NpyDtype, number>> = {
  '<f4': 4,
  '<f8': 8,
  '|u1': 1,
  '|i1': 1,
  '<i4': 4,
  '<i8': 8,
};

/** `\x93NUMPY`: the first six bytes of every `.npy` file. */
const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59] as const;

/** Longest header dict accepted (numpy itself refuses more than 10,000 by default). */
const MAX_HEADER_BYTES = 65_536;

type HeaderValue = string | boolean | number[];

/**
 * A strict parser of the header dict numpy writes, e.g.
 * `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }`: single- or double-quoted string
 * keys, values that are strings, `True`/`False` or tuples of non-negative integers, an optional
 * trailing comma. Anything else (no `eval`) is an error naming the offset.
 */
function parseHeaderDict(text: string, fail: (problem: string) => never): Map<string, HeaderValue> {
  let i = 0;
  const ws = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r'))
      i++;
  };
  const expect = (c: string) => {
    ws();
    if (text[i] !== c)
      fail(`expected "${c}" at offset ${i} of the header, found ${JSON.stringify(text[i] ?? 'end')}`);
    i++;
  };
  const str = (): string => {
    ws();
    const q = text[i];
    if (q !== "'" && q !== '"') fail(`expected a quoted string at offset ${i} of the header`);
    const end = text.indexOf(q, i + 1);
    if (end < 0) fail(`unterminated string at offset ${i} of the header`);
    const s = text.slice(i + 1, end);
    if (s.includes('\\')) fail(`escape sequences are not supported in the header (offset ${i})`);
    i = end + 1;
    return s;
  };
  const int = (): number => {
    ws();
    const m = /^[0-9]{1,16}/.exec(text.slice(i, i + 17));
    if (!m) fail(`expected a non-negative integer at offset ${i} of the header`);
    i += m[0].length;
    const n = Number(m[0]);
    if (!Number.isSafeInteger(n)) fail(`dimension ${m[0]} is too large`);
    return n;
  };
  const value = (): HeaderValue => {
    ws();
    const c = text[i];
    if (c === "'" || c === '"') return str();
    if (text.startsWith('True', i)) {
      i += 4;
      return true;
    }
    if (text.startsWith('False', i)) {
      i += 5;
      return false;
    }
    if (c === '(') {
      i++;
      const dims: number[] = [];
      ws();
      if (text[i] === ')') {
        i++;
        return dims;
      }
      for (;;) {
        dims.push(int());
        ws();
        if (text[i] === ')') {
          // A one-element tuple needs its comma: `(3,)`.
          if (dims.length === 1) fail(`a one-element shape must be written "(n,)" (offset ${i})`);
          i++;
          return dims;
        }
        expect(',');
        ws();
        if (text[i] === ')') {
          i++;
          return dims;
        }
      }
    }
    return fail(
      `unsupported value at offset ${i} of the header (only strings, True/False and integer tuples)`,
    );
  };
  const out = new Map<string, HeaderValue>();
  expect('{');
  for (;;) {
    ws();
    if (text[i] === '}') break;
    const key = str();
    if (out.has(key)) fail(`key ${JSON.stringify(key)} appears twice in the header`);
    expect(':');
    out.set(key, value());
    ws();
    if (text[i] === ',') {
      i++;
      continue;
    }
    if (text[i] !== '}') fail(`expected "," or "}" at offset ${i} of the header`);
  }
  i++;
  ws();
  if (i !== text.length) fail(`unexpected text after the header dict at offset ${i}`);
  return out;
}

/**
 * Reads a NumPy `.npy` file (format versions 1.0, 2.0 and 3.0) of dtype `<f4`, `<f8`, `|u1`,
 * `|i1`, `<i4` or `<i8`, C order, as float32 values.
 *
 * Errors (`DataError`): `DATA_FILE_MISSING`; `DATA_FORMAT` for a wrong magic, an unknown version,
 * a truncated or malformed header (field `header`), a big-endian, object or other unsupported
 * dtype (field `descr`), Fortran order (field `fortran_order`), or a data length that does not
 * match the shape (field `data`, checked before the values are allocated); `DATA_NON_FINITE` for a
 * NaN, infinite or beyond-float32 value, naming its index.
 */
export function readNpy(path: string): NpyArray {
  return parseNpy(readDataFile(path), path);
}

/** {@link readNpy} on bytes already in memory; `file` names them in errors. */
export function parseNpy(bytes: Uint8Array, file: string): NpyArray {
  const at = (field: string, problem: string, details?: Record<string, unknown>): never => {
    throw DataError.at('DATA_FORMAT', { file, field }, problem, details ? { details } : undefined);
  };
  if (bytes.length < 10 || MAGIC.some((b, k) => bytes[k] !== b)) {
    const shown = Array.from(bytes.subarray(0, 6), (b) => b.toString(16).padStart(2, '0')).join(' ');
    at(
      'magic',
      `not a .npy file: starts with ${shown || 'nothing'}, expected 93 4e 55 4d 50 59 ("\\x93NUMPY")`,
    );
  }
  const major = bytes[6]!;
  const minor = bytes[7]!;
  if ((major !== 1 && major !== 2 && major !== 3) || minor !== 0) {
    at('version', `format version ${major}.${minor} is not supported (1.0, 2.0, 3.0)`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const lenBytes = major === 1 ? 2 : 4;
  if (bytes.length < 8 + lenBytes) at('header', `truncated: ${bytes.length} bytes, no header length`);
  const headerLen = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const start = 8 + lenBytes;
  if (headerLen > MAX_HEADER_BYTES) {
    at('header', `header length ${headerLen} exceeds the ${MAX_HEADER_BYTES}-byte limit`);
  }
  if (bytes.length < start + headerLen) {
    at('header', `truncated: header needs ${start + headerLen} bytes, file has ${bytes.length}`, {
      expected: start + headerLen,
      actual: bytes.length,
    });
  }
  const raw = bytes.subarray(start, start + headerLen);
  let text: string;
  try {
    text = new TextDecoder(major === 3 ? 'utf-8' : 'latin1', { fatal: true }).decode(raw);
  } catch (cause) {
    throw DataError.at('DATA_FORMAT', { file, field: 'header' }, 'header is not valid UTF-8', { cause });
  }
  const dict = parseHeaderDict(text, (problem) => at('header', problem));
  for (const key of dict.keys()) {
    if (key !== 'descr' && key !== 'fortran_order' && key !== 'shape') {
      at('header', `unexpected key ${JSON.stringify(key)} (expected descr, fortran_order, shape)`);
    }
  }
  const descr = dict.get('descr');
  const fortran = dict.get('fortran_order');
  const shape = dict.get('shape');
  if (typeof descr !== 'string') return at('descr', 'the header has no descr string (a structured dtype?)');
  if (typeof fortran !== 'boolean') return at('fortran_order', 'the header has no fortran_order True/False');
  if (!Array.isArray(shape)) return at('shape', 'the header has no shape tuple');
  if (fortran)
    at(
      'fortran_order',
      'Fortran-order arrays are not supported; save a C-order array (np.ascontiguousarray)',
    );
  if (!(descr in ITEM_SIZE)) {
    const why = descr.startsWith('>')
      ? 'big-endian data is not supported; save as little-endian (arr.astype(arr.dtype.newbyteorder("<")))'
      : descr.includes('O')
        ? 'object arrays are not supported (they hold pickled Python objects)'
        : `dtype is not supported (${Object.keys(ITEM_SIZE).join(', ')})`;
    at('descr', `${JSON.stringify(descr)}: ${why}`);
  }
  const dtype = descr as NpyDtype;
  let count = 1;
  for (const n of shape) {
    count *= n;
    if (!Number.isSafeInteger(count)) at('shape', `shape (${shape.join(', ')}) has too many elements`);
  }
  const size = ITEM_SIZE[dtype];
  const offset = start + headerLen;
  const expected = offset + count * size;
  if (bytes.length !== expected) {
    const what = bytes.length < expected ? 'truncated' : 'trailing bytes';
    at(
      'data',
      `${what}: shape (${shape.join(', ')}) of ${dtype} needs ${expected} bytes (${offset} header + ${count} × ${size}), file has ${bytes.length}`,
      { expected, actual: bytes.length, shape },
    );
  }
  const data = new Float32Array(count);
  switch (dtype) {
    case '<f4':
      for (let k = 0; k < count; k++) data[k] = view.getFloat32(offset + 4 * k, true);
      break;
    case '<f8':
      for (let k = 0; k < count; k++) data[k] = view.getFloat64(offset + 8 * k, true);
      break;
    case '|u1':
      for (let k = 0; k < count; k++) data[k] = bytes[offset + k]!;
      break;
    case '|i1':
      for (let k = 0; k < count; k++) data[k] = view.getInt8(offset + k);
      break;
    case '<i4':
      for (let k = 0; k < count; k++) data[k] = view.getInt32(offset + 4 * k, true);
      break;
    case '<i8':
      for (let k = 0; k < count; k++) data[k] = Number(view.getBigInt64(offset + 8 * k, true));
      break;
  }
  if (dtype === '<f4' || dtype === '<f8') {
    for (let k = 0; k < count; k++) {
      if (!Number.isFinite(data[k]!)) {
        const index = unravel(k, shape);
        const original = dtype === '<f8' ? view.getFloat64(offset + 8 * k, true) : data[k]!;
        throw DataError.at(
          'DATA_NON_FINITE',
          { file, field: `data[${index.join(', ')}]` },
          Number.isFinite(original)
            ? `value ${original} at flat index ${k} is beyond float32 range`
            : `value ${original} at flat index ${k} is not finite`,
          { details: { index: k } },
        );
      }
    }
  }
  return { shape: [...shape], dtype, data };
}

/** The C-order multi-index of flat index `k` in `shape`. */
function unravel(k: number, shape: readonly number[]): number[] {
  const out = new Array<number>(shape.length).fill(0);
  let rest = k;
  for (let d = shape.length - 1; d >= 0; d--) {
    out[d] = rest % shape[d]!;
    rest = Math.floor(rest / shape[d]!);
  }
  return out;
}

/**
 * Encodes a format-1.0 `.npy` file exactly as `numpy.save` does (header padded with spaces and a
 * newline to a multiple of 64 bytes); for fixtures and tests. `data.length` must equal the
 * product of `shape`.
 */
export function encodeNpy(shape: readonly number[], dtype: NpyDtype, values: ArrayLike<number>): Uint8Array {
  const count = shape.reduce((a, b) => a * b, 1);
  if (count !== values.length) {
    throw new RangeError(`encodeNpy: shape (${shape.join(', ')}) does not match ${values.length} values`);
  }
  const tuple = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let dict = `{'descr': '${dtype}', 'fortran_order': False, 'shape': ${tuple}, }`;
  const pad = (64 - ((10 + dict.length + 1) % 64)) % 64;
  dict = `${dict}${' '.repeat(pad)}\n`;
  const size = ITEM_SIZE[dtype];
  const out = new Uint8Array(10 + dict.length + count * size);
  out.set(MAGIC, 0);
  out[6] = 1;
  out[7] = 0;
  const view = new DataView(out.buffer);
  view.setUint16(8, dict.length, true);
  for (let k = 0; k < dict.length; k++) out[10 + k] = dict.charCodeAt(k);
  const o = 10 + dict.length;
  for (let k = 0; k < count; k++) {
    const v = values[k]!;
    if (dtype === '<f4') view.setFloat32(o + 4 * k, v, true);
    else if (dtype === '<f8') view.setFloat64(o + 8 * k, v, true);
    else if (dtype === '|u1') view.setUint8(o + k, v);
    else if (dtype === '|i1') view.setInt8(o + k, v);
    else if (dtype === '<i4') view.setInt32(o + 4 * k, v, true);
    else view.setBigInt64(o + 8 * k, BigInt(v), true);
  }
  return out;
}
