import { assertInteger, CohortError, InvalidArgumentError } from '../errors/index.ts';
import { float32ToLeBytes, leBytesToFloat32 } from './float32-le.ts';

/** The reserved header key holding the string-to-string metadata map. */
export const SAFETENSORS_METADATA_KEY = '__metadata__';

/**
 * Default cap on the header length a reader accepts, checked before the header is decoded:
 * 100 MB, the limit of the reference (Rust) implementation.
 */
export const SAFETENSORS_MAX_HEADER_BYTES = 100_000_000;

/** Stable codes of {@link SafetensorsError}; never renamed once released. */
export const SAFETENSORS_ERROR_CODES = [
  /** Fewer bytes than the 8-byte length prefix, or a header length that runs past the buffer. */
  'SAFETENSORS_TRUNCATED',
  /** A header length over the reader's `maxHeaderBytes`. */
  'SAFETENSORS_HEADER_TOO_LARGE',
  /** A header that is not UTF-8 JSON of the expected shape (fields, types, metadata). */
  'SAFETENSORS_HEADER_INVALID',
  /** A dtype other than `F32`. */
  'SAFETENSORS_DTYPE_UNSUPPORTED',
  /** A tensor whose shape does not match the byte length of its `data_offsets`. */
  'SAFETENSORS_SHAPE_MISMATCH',
  /** Offsets out of the data section, overlapping, leaving a gap, or not reaching its end. */
  'SAFETENSORS_OFFSETS_INVALID',
] as const;

export type SafetensorsErrorCode = (typeof SAFETENSORS_ERROR_CODES)[number];

/** Bytes that are not a safetensors file this reader accepts; the message names the tensor and the problem. */
export class SafetensorsError extends CohortError {
  declare readonly code: SafetensorsErrorCode;

  constructor(
    code: SafetensorsErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(code, message, options);
  }
}

/** A named float32 tensor to write: `data` holds the product of `shape` values, row-major. */
export interface SafetensorsTensor {
  readonly name: string;
  readonly dtype: 'F32';
  readonly shape: readonly number[];
  readonly data: Float32Array;
}

/** A tensor read back by {@link decodeSafetensors}; `data` is a fresh array. */
export interface SafetensorsDecodedTensor {
  readonly dtype: string;
  readonly shape: number[];
  readonly data: Float32Array;
}

/** The contents of a safetensors file. */
export interface SafetensorsContents {
  /**
   * Tensors by name, in the order of their data in the file (`data_offsets`); empty tensors at the
   * same offset in name order (UTF-16 code units).
   */
  readonly tensors: Map<string, SafetensorsDecodedTensor>;
  /** The `__metadata__` map; empty when the file has none. */
  readonly metadata: Record<string, string>;
}

/** Limits of {@link decodeSafetensors}. */
export interface SafetensorsLimits {
  /** Largest header length accepted (default {@link SAFETENSORS_MAX_HEADER_BYTES}). */
  readonly maxHeaderBytes?: number;
}

const F32_BYTES = 4;
const LENGTH_PREFIX_BYTES = 8;
const SPACE = 0x20;
const OPEN_BRACE = 0x7b;
const TENSOR_FIELDS = new Set(['dtype', 'shape', 'data_offsets']);
/** A lone UTF-16 surrogate: not encodable as UTF-8, so not a valid JSON string for other readers. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * The safetensors bytes of `tensors`, laid out contiguously in the order given, and `metadata`
 * (written as `__metadata__` after the tensors, keys sorted; omitted when absent or empty). The
 * header is compact JSON padded with spaces to a multiple of 8 bytes, so the data starts 8-byte
 * aligned. Same input, same bytes.
 *
 * @throws InvalidArgumentError naming the tensor (or metadata key) when a name is empty, repeated,
 *   `__metadata__` or not well-formed Unicode; when the dtype is not `F32`; when a shape entry is
 *   not a non-negative integer or the shape's product is not `data.length`; when a value is NaN
 *   or ±Infinity; when a metadata value is not a string.
 */
export function encodeSafetensors(
  tensors: readonly SafetensorsTensor[],
  metadata?: Record<string, string>,
): Uint8Array {
  if (!Array.isArray(tensors)) throw new InvalidArgumentError('tensors must be an array');
  const entries: string[] = [];
  const seen = new Set<string>();
  let offset = 0;
  tensors.forEach((tensor, index) => {
    assertTensor(tensor, index, seen);
    const end = offset + tensor.data.length * F32_BYTES;
    entries.push(
      `${JSON.stringify(tensor.name)}:{"dtype":"F32","shape":${JSON.stringify([...tensor.shape])},` +
        `"data_offsets":[${offset},${end}]}`,
    );
    offset = end;
  });
  const metadataEntries = metadataJson(metadata);
  if (metadataEntries !== undefined) entries.push(`"${SAFETENSORS_METADATA_KEY}":${metadataEntries}`);

  const json = new TextEncoder().encode(`{${entries.join(',')}}`);
  const headerLength = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(LENGTH_PREFIX_BYTES + headerLength + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerLength), true);
  out.set(json, LENGTH_PREFIX_BYTES);
  out.fill(SPACE, LENGTH_PREFIX_BYTES + json.length, LENGTH_PREFIX_BYTES + headerLength);
  let at = LENGTH_PREFIX_BYTES + headerLength;
  for (const tensor of tensors) {
    out.set(float32ToLeBytes(tensor.data), at);
    at += tensor.data.byteLength;
  }
  return out;
}

/** Validates one input tensor, naming it in any error. */
function assertTensor(tensor: SafetensorsTensor, index: number, seen: Set<string>): void {
  const at = `tensors[${index}]`;
  if (tensor === null || typeof tensor !== 'object')
    throw new InvalidArgumentError(`${at} must be an object`);
  const { name, dtype, shape, data } = tensor;
  if (typeof name !== 'string' || name.length === 0) {
    throw new InvalidArgumentError(`${at}.name must be a non-empty string`, { details: { index } });
  }
  const label = `tensor ${JSON.stringify(name)}`;
  if (name === SAFETENSORS_METADATA_KEY) {
    throw new InvalidArgumentError(`${label}: the name ${SAFETENSORS_METADATA_KEY} is reserved`, {
      details: { index, name },
    });
  }
  if (LONE_SURROGATE.test(name)) {
    throw new InvalidArgumentError(`${label}: name is not well-formed Unicode (lone surrogate)`, {
      details: { index },
    });
  }
  if (seen.has(name)) {
    throw new InvalidArgumentError(`${label} appears twice; names must be unique`, {
      details: { index, name },
    });
  }
  seen.add(name);
  if (dtype !== 'F32') {
    throw new InvalidArgumentError(`${label}: dtype ${String(dtype)} is not supported; only F32`, {
      details: { name, dtype: String(dtype) },
    });
  }
  if (!(data instanceof Float32Array)) {
    throw new InvalidArgumentError(`${label}: data must be a Float32Array`, { details: { name } });
  }
  if (!Array.isArray(shape)) {
    throw new InvalidArgumentError(`${label}: shape must be an array`, { details: { name } });
  }
  let count = 1;
  shape.forEach((d, i) => {
    assertInteger(`${label} shape[${i}]`, d, 0, Number.MAX_SAFE_INTEGER);
    count *= d;
  });
  if (count !== data.length) {
    throw new InvalidArgumentError(
      `${label}: shape [${shape.join(', ')}] holds ${count} values, data has ${data.length}`,
      { details: { name, shape: [...shape], count, length: data.length } },
    );
  }
  for (let i = 0; i < data.length; i++) {
    const v = data[i]!;
    if (v - v !== 0) {
      throw new InvalidArgumentError(`${label}: data[${i}] is ${v}; every value must be finite`, {
        details: { name, index: i, value: String(v) },
      });
    }
  }
}

/** The `__metadata__` JSON object (keys sorted), or undefined when there is nothing to write. */
function metadataJson(metadata: Record<string, string> | undefined): string | undefined {
  if (metadata === undefined) return undefined;
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) {
    throw new InvalidArgumentError('metadata must be an object of string values');
  }
  const keys = Object.keys(metadata).sort();
  if (keys.length === 0) return undefined;
  const parts = keys.map((key) => {
    const value: unknown = metadata[key];
    if (typeof value !== 'string') {
      throw new InvalidArgumentError(
        `metadata[${JSON.stringify(key)}] is ${typeof value}; must be a string`,
        {
          details: { key },
        },
      );
    }
    if (LONE_SURROGATE.test(key) || LONE_SURROGATE.test(value)) {
      throw new InvalidArgumentError(
        `metadata[${JSON.stringify(key)}]: key or value is not well-formed Unicode (lone surrogate)`,
        { details: { key } },
      );
    }
    return `${JSON.stringify(key)}:${JSON.stringify(value)}`;
  });
  return `{${parts.join(',')}}`;
}

/**
 * Reads safetensors bytes strictly. Checks, in order: the 8-byte length prefix is there; the
 * header length is at most `limits.maxHeaderBytes` (before anything is decoded) and fits in the
 * buffer; the header is UTF-8 JSON starting with `{` whose entries have exactly `dtype`, `shape`
 * and `data_offsets`; every dtype is `F32`; shape entries and offsets are non-negative integers
 * with `begin ≤ end`; each shape's product times 4 is `end − begin`; sorted by offset, the tensors
 * cover the data section from 0 to its end with no overlap and no gap. Padding after the header
 * JSON (spaces) is accepted; the header length need not be a multiple of 8.
 *
 * Values are returned as stored, NaN and ±Infinity included. Each `data` is a fresh array.
 *
 * @throws SafetensorsError with one of {@link SAFETENSORS_ERROR_CODES}, naming the tensor.
 * @throws InvalidArgumentError when `bytes` is not a Uint8Array or `limits.maxHeaderBytes` is not
 *   an integer ≥ 2.
 */
export function decodeSafetensors(bytes: Uint8Array, limits?: SafetensorsLimits): SafetensorsContents {
  if (!(bytes instanceof Uint8Array)) throw new InvalidArgumentError('bytes must be a Uint8Array');
  const maxHeaderBytes = limits?.maxHeaderBytes ?? SAFETENSORS_MAX_HEADER_BYTES;
  assertInteger('limits.maxHeaderBytes', maxHeaderBytes, 2, Number.MAX_SAFE_INTEGER);

  if (bytes.length < LENGTH_PREFIX_BYTES) {
    throw new SafetensorsError(
      'SAFETENSORS_TRUNCATED',
      `safetensors file is ${bytes.length} bytes, shorter than the 8-byte header length`,
      { details: { length: bytes.length } },
    );
  }
  const declared = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getBigUint64(0, true);
  if (declared > BigInt(maxHeaderBytes)) {
    throw new SafetensorsError(
      'SAFETENSORS_HEADER_TOO_LARGE',
      `safetensors header length ${declared} exceeds the limit of ${maxHeaderBytes} bytes`,
      { details: { headerLength: String(declared), maxHeaderBytes } },
    );
  }
  const headerLength = Number(declared);
  if (headerLength > bytes.length - LENGTH_PREFIX_BYTES) {
    throw new SafetensorsError(
      'SAFETENSORS_TRUNCATED',
      `safetensors header length ${headerLength} runs past the end of the ${bytes.length}-byte file`,
      { details: { headerLength, length: bytes.length } },
    );
  }
  const header = parseHeader(bytes.subarray(LENGTH_PREFIX_BYTES, LENGTH_PREFIX_BYTES + headerLength));
  const data = bytes.subarray(LENGTH_PREFIX_BYTES + headerLength);

  let metadata: Record<string, string> = {};
  const entries: { name: string; shape: number[]; begin: number; end: number }[] = [];
  for (const name of Object.keys(header)) {
    const value = header[name];
    if (name === SAFETENSORS_METADATA_KEY) metadata = readMetadata(value);
    else entries.push({ name, ...readEntry(name, value) });
  }

  // By offset; empty tensors sharing an offset by name, so the order never depends on JSON key order.
  entries.sort(
    (a, b) => a.begin - b.begin || a.end - b.end || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
  let covered = 0;
  const tensors = new Map<string, SafetensorsDecodedTensor>();
  for (const { name, shape, begin, end } of entries) {
    const label = `tensor ${JSON.stringify(name)}`;
    if (end > data.length) {
      throw offsetsError(
        `${label}: data_offsets [${begin}, ${end}] run past the ${data.length}-byte data section`,
        name,
      );
    }
    if (begin < covered) {
      throw offsetsError(
        `${label}: data_offsets [${begin}, ${end}] overlap the data before ${covered}`,
        name,
      );
    }
    if (begin > covered) {
      throw offsetsError(
        `${label}: data_offsets [${begin}, ${end}] leave bytes ${covered}..${begin} unused`,
        name,
      );
    }
    covered = end;
    tensors.set(name, { dtype: 'F32', shape, data: leBytesToFloat32(data.subarray(begin, end)) });
  }
  if (covered !== data.length) {
    throw offsetsError(
      `safetensors tensors cover ${covered} of the ${data.length}-byte data section; the rest is unused`,
      undefined,
    );
  }
  return { tensors, metadata };
}

function offsetsError(message: string, name: string | undefined): SafetensorsError {
  return new SafetensorsError('SAFETENSORS_OFFSETS_INVALID', message, {
    details: name === undefined ? {} : { name },
  });
}

function headerError(message: string, name?: string, cause?: unknown): SafetensorsError {
  return new SafetensorsError('SAFETENSORS_HEADER_INVALID', message, {
    details: name === undefined ? {} : { name },
    ...(cause === undefined ? {} : { cause }),
  });
}

/** The header JSON as an object of entries; padding after the JSON may only be whitespace. */
function parseHeader(raw: Uint8Array): Record<string, unknown> {
  if (raw[0] !== OPEN_BRACE) throw headerError('safetensors header must be a JSON object starting with "{"');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(raw);
  } catch (cause) {
    throw headerError('safetensors header is not valid UTF-8', undefined, cause);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw headerError(`safetensors header is not valid JSON: ${(cause as Error).message}`, undefined, cause);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw headerError('safetensors header must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

function readMetadata(value: unknown): Record<string, string> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw headerError(`safetensors ${SAFETENSORS_METADATA_KEY} must be an object of strings`);
  }
  const out: Record<string, string> = {};
  for (const [key, v] of Object.entries(value)) {
    if (typeof v !== 'string') {
      throw headerError(
        `safetensors ${SAFETENSORS_METADATA_KEY}[${JSON.stringify(key)}] is ${v === null ? 'null' : typeof v}; must be a string`,
      );
    }
    Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function readEntry(name: string, value: unknown): { shape: number[]; begin: number; end: number } {
  const label = `tensor ${JSON.stringify(name)}`;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw headerError(`${label}: header entry must be an object`, name);
  }
  const entry = value as Record<string, unknown>;
  for (const key of Object.keys(entry)) {
    if (!TENSOR_FIELDS.has(key)) throw headerError(`${label}: unexpected field ${JSON.stringify(key)}`, name);
  }
  const { dtype, shape, data_offsets: offsets } = entry;
  if (typeof dtype !== 'string') throw headerError(`${label}: dtype must be a string`, name);
  if (dtype !== 'F32') {
    throw new SafetensorsError(
      'SAFETENSORS_DTYPE_UNSUPPORTED',
      `${label} has dtype ${JSON.stringify(dtype)}; only F32 is supported`,
      { details: { name, dtype } },
    );
  }
  if (!Array.isArray(shape) || !shape.every(isCount)) {
    throw headerError(`${label}: shape must be an array of non-negative integers`, name);
  }
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isCount)) {
    throw headerError(`${label}: data_offsets must be [begin, end], non-negative integers`, name);
  }
  const [begin, end] = offsets as [number, number];
  if (begin > end) {
    throw offsetsError(`${label}: data_offsets [${begin}, ${end}] end before they begin`, name);
  }
  const count = (shape as number[]).reduce((a, d) => a * d, 1);
  if (!Number.isSafeInteger(count * F32_BYTES) || count * F32_BYTES !== end - begin) {
    throw new SafetensorsError(
      'SAFETENSORS_SHAPE_MISMATCH',
      `${label}: shape [${shape.join(', ')}] of F32 needs ${count * F32_BYTES} bytes, ` +
        `data_offsets [${begin}, ${end}] give ${end - begin}`,
      { details: { name, shape, begin, end } },
    );
  }
  return { shape: [...(shape as number[])], begin, end };
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}
