import { constants, gunzipSync } from 'node:zlib';
import { DataError } from './data-error.ts';
import { readDataFile } from './read-file.ts';

/** An unsigned-byte IDX array: `dims` (outermost first) and the values, row-major. */
export interface IdxArray {
  readonly dims: readonly number[];
  readonly data: Uint8Array;
}

/** IDX type byte of unsigned bytes, the only element type read. */
const IDX_UBYTE = 0x08;

const TYPE_NAMES: Readonly<Record<number, string>> = {
  8: 'unsigned byte',
  9: 'signed byte',
  11: 'int16',
  12: 'int32',
  13: 'float32',
  14: 'float64',
};

/** Largest gzip IDX file inflated: 1 GiB (MNIST's training images are 47 MB). */
export const MAX_IDX_BYTES = 2 ** 30;

/** Compressed prefixes tried, in turn, to inflate just the IDX header of a gzip file. */
const HEADER_PREFIXES = [64, 1024, 16_384] as const;

/**
 * Inflates a gzip IDX file without trusting it: first only a short compressed prefix (at most
 * 16 KiB in, so at most ~16 MB out) to read the magic and dimensions, then the whole file with its
 * output capped at the size those dimensions imply (header + ∏ dims bytes, itself capped at
 * {@link MAX_IDX_BYTES}). A gzip bomb or a file whose contents exceed its header is refused.
 */
function gunzipIdx(raw: Uint8Array, file: string): Uint8Array {
  const inflate = (input: Uint8Array, maxOutputLength: number, partial: boolean): Uint8Array => {
    try {
      return gunzipSync(input, {
        maxOutputLength,
        ...(partial ? { finishFlush: constants.Z_SYNC_FLUSH } : {}),
      });
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
        throw DataError.at(
          'DATA_FORMAT',
          { file, field: 'gzip' },
          `inflates to more than the ${maxOutputLength} bytes its IDX header implies`,
          { cause, details: { limit: maxOutputLength } },
        );
      }
      throw DataError.at('DATA_FORMAT', { file, field: 'gzip' }, 'gzip data cannot be inflated', { cause });
    }
  };
  let head: Uint8Array = new Uint8Array(0);
  for (const n of HEADER_PREFIXES) {
    const whole = n >= raw.length;
    // A prefix expands at most ~1032:1 (deflate's limit), so the cap below is never hit by a valid file.
    head = inflate(raw.subarray(0, Math.min(n, raw.length)), n * 1100, true);
    if (head.length >= 4 && head.length >= 4 + 4 * head[3]!) break;
    if (whole) break;
  }
  if (
    head.length < 4 ||
    head[0] !== 0 ||
    head[1] !== 0 ||
    head[2] !== IDX_UBYTE ||
    head[3] === 0 ||
    head.length < 4 + 4 * head[3]!
  ) {
    // Not (the start of) an unsigned-byte IDX file: let the checks of parseIdx name the problem.
    return head;
  }
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  const rank = head[3]!;
  let limit = 4 + 4 * rank;
  let size = 1;
  for (let d = 0; d < rank; d++) size *= view.getUint32(4 + 4 * d, false);
  limit += size;
  if (limit > MAX_IDX_BYTES) {
    throw DataError.at(
      'DATA_FORMAT',
      { file, field: 'dimensions' },
      `dimensions need ${limit} bytes, more than the ${MAX_IDX_BYTES}-byte limit`,
      { details: { expected: limit, limit: MAX_IDX_BYTES } },
    );
  }
  return inflate(raw, limit, false);
}

/**
 * Reads an IDX file (LeCun's MNIST format) of unsigned bytes: big-endian magic `0x0000 08 nn`
 * (nn = number of dimensions, e.g. `0x00000803` images, `0x00000801` labels), nn big-endian u32
 * sizes, then the bytes. A gzip file (magic `1f 8b`) is inflated first, its output capped at the
 * size its IDX header implies (a larger output is `DATA_FORMAT`, field `gzip`).
 *
 * Throws `DATA_FILE_MISSING` for a missing file and `DATA_FORMAT` for a bad magic, an unsupported
 * element type, or a length that does not match the dimensions (expected and actual bytes named).
 */
export function readIdx(path: string): IdxArray {
  return parseIdx(readDataFile(path), path);
}

/** {@link readIdx} on bytes already in memory; `file` names them in errors. */
export function parseIdx(raw: Uint8Array, file: string): IdxArray {
  const bytes = raw.length >= 2 && raw[0] === 0x1f && raw[1] === 0x8b ? gunzipIdx(raw, file) : raw;
  if (bytes.length < 4) {
    throw DataError.at(
      'DATA_FORMAT',
      { file, field: 'magic' },
      `file has ${bytes.length} bytes, fewer than the 4-byte IDX magic`,
      { details: { expected: 4, actual: bytes.length } },
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magic = view.getUint32(0, false);
  const hex = `0x${magic.toString(16).padStart(8, '0')}`;
  const type = bytes[2]!;
  const rank = bytes[3]!;
  if (bytes[0] !== 0 || bytes[1] !== 0 || rank === 0) {
    throw DataError.at('DATA_FORMAT', { file, field: 'magic' }, `${hex} is not an IDX magic (0x000008nn)`);
  }
  if (type !== IDX_UBYTE) {
    throw DataError.at(
      'DATA_FORMAT',
      { file, field: 'magic' },
      `${hex}: element type 0x${type.toString(16).padStart(2, '0')} (${TYPE_NAMES[type] ?? 'unknown'}) is not supported; only unsigned byte (0x08)`,
    );
  }
  const header = 4 + 4 * rank;
  if (bytes.length < header) {
    throw DataError.at(
      'DATA_FORMAT',
      { file, field: 'dimensions' },
      `truncated: ${rank} dimensions need a ${header}-byte header, file has ${bytes.length} bytes`,
      { details: { expected: header, actual: bytes.length } },
    );
  }
  const dims: number[] = [];
  let size = 1;
  for (let d = 0; d < rank; d++) {
    const n = view.getUint32(4 + 4 * d, false);
    dims.push(n);
    size *= n;
  }
  const expected = header + size;
  if (bytes.length !== expected) {
    const what = bytes.length < expected ? 'truncated' : 'trailing bytes';
    throw DataError.at(
      'DATA_FORMAT',
      { file, field: 'data' },
      `${what}: dimensions ${dims.join('×')} need ${expected} bytes (${header} header + ${size} data), file has ${bytes.length}`,
      { details: { expected, actual: bytes.length, dims } },
    );
  }
  return { dims, data: bytes.subarray(header) };
}

/**
 * Encodes an unsigned-byte IDX file (the inverse of {@link parseIdx}); for fixtures and tests.
 * `data.length` must equal the product of `dims`.
 */
export function encodeIdx(dims: readonly number[], data: Uint8Array): Uint8Array {
  const size = dims.reduce((a, b) => a * b, 1);
  if (size !== data.length || dims.length === 0 || dims.length > 255) {
    throw new RangeError(`encodeIdx: dims ${dims.join('×')} do not match ${data.length} bytes`);
  }
  const out = new Uint8Array(4 + 4 * dims.length + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, (IDX_UBYTE << 8) | dims.length, false);
  dims.forEach((n, d) => {
    view.setUint32(4 + 4 * d, n, false);
  });
  out.set(data, 4 + 4 * dims.length);
  return out;
}
