import type { PathSegment } from './schema-walk.ts';

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

/**
 * Formats a configuration path the way error messages name it: dots between keys, `[i]`
 * for array indices, `["odd key"]` for keys that are not plain identifiers, `(root)` for
 * the document itself. Example: `crypto.ckks.coeffModulus[1]`.
 */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (typeof seg === 'string' && IDENTIFIER.test(seg)) out += out === '' ? seg : `.${seg}`;
    else out += `[${JSON.stringify(String(seg))}]`;
  }
  return out === '' ? '(root)' : out;
}

/**
 * Parses a dotted override path (`crypto.ckks.coeffModulus[1]` or `crypto.ckks.coeffModulus.1`)
 * into segments; all-digit segments become array indices. Returns `undefined` for an empty or
 * malformed path.
 */
export function parseDottedPath(text: string): PathSegment[] | undefined {
  const out: PathSegment[] = [];
  for (const part of text.split('.')) {
    const m = /^([^[\]]*)((?:\[\d+\])*)$/.exec(part);
    if (m === null) return undefined;
    const key = m[1] ?? '';
    const indices = m[2] ?? '';
    if (key === '' && indices === '') return undefined;
    if (key !== '') out.push(/^\d+$/.test(key) ? Number(key) : key);
    for (const idx of indices.matchAll(/\[(\d+)\]/g)) out.push(Number(idx[1]));
  }
  return out.length === 0 ? undefined : out;
}
