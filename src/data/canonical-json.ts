import { InvalidArgumentError } from '../errors/index.ts';

function write(value: unknown, path: string): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value))
      throw new InvalidArgumentError(`${path} is ${value}; canonical JSON needs finite numbers`);
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((v, i) => write(v, `${path}[${i}]`)).join(',')}]`;
  if (typeof value === 'object') {
    const keys = Object.keys(value)
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${write((value as Record<string, unknown>)[k], `${path}.${k}`)}`).join(',')}}`;
  }
  throw new InvalidArgumentError(`${path} is a ${typeof value}; canonical JSON holds only JSON values`);
}

/**
 * Canonical JSON text of `value`: no white space, object keys sorted (by UTF-16 code units, as
 * `Array.prototype.sort` does), keys whose value is `undefined` left out, numbers as
 * `JSON.stringify` writes them (the shortest text that reads back to the same double), strings
 * escaped as `JSON.stringify` does. Equal data gives equal text, whatever the key order it was
 * built in.
 *
 * @throws InvalidArgumentError for a non-finite number or a value JSON cannot hold (function,
 *   bigint, symbol), naming its path from `value`.
 */
export function canonicalJson(value: unknown): string {
  return write(value, 'value');
}
