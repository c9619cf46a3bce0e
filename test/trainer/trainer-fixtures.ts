import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initParameters, type ModelSpec } from '../../federation/index.ts';
import { rng } from '../helpers/rng.ts';

/** The interpreter the PyTorch example runs under (Debian's python3-torch). */
export const SYSTEM_PYTHON = '/usr/bin/python3';

/** examples/pytorch, absolute. */
export const PYTORCH_EXAMPLES = resolve(import.meta.dirname, '../../examples/pytorch');

/** Why the torch-dependent tests cannot run here, or undefined when `python` imports torch and numpy. */
export function torchUnavailable(python = SYSTEM_PYTHON): string | undefined {
  const probe = spawnSync(python, ['-c', 'import torch, numpy'], { encoding: 'utf8', timeout: 60_000 });
  if (probe.status === 0) return undefined;
  const why = probe.error?.message ?? (probe.stderr.trim().split('\n').pop() || `exit ${probe.status}`);
  return `${python} cannot import torch (${why}); install python3-torch and python3-numpy (.ci/setup does)`;
}

/** A fresh private temporary folder. */
export function tempFolder(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `cohort-${prefix}-`));
  chmodSync(dir, 0o700);
  return dir;
}

/**
 * A CSV of `rows` rows, feature columns f0…f3 and `label` in {0, 1, 2}: the label is the arg-max of
 * a fixed linear map of the features, so a small MLP learns it quickly.
 */
export function writeSiteCsv(path: string, rows: number, seed: number): void {
  const next = rng(seed);
  const lines = ['f0,f1,f2,f3,label'];
  for (let r = 0; r < rows; r++) {
    const x = [0, 1, 2, 3].map(() => next() * 2 - 1);
    const scores = [x[0]! + x[1]!, x[2]! - x[0]!, x[3]! - x[1]!];
    const label = scores.indexOf(Math.max(...scores));
    lines.push(`${x.map((v) => v.toFixed(5)).join(',')},${label}`);
  }
  writeFileSync(path, `${lines.join('\n')}\n`);
}

/**
 * A small CNN spec on [1, 6, 6] inputs (conv2d 'same', ReLU, max-pool, then a dense layer of 3
 * classes, flattening implicitly or after an explicit `flatten`, softmax), or undefined where
 * `ModelSpec` does not take layer lists.
 */
export function smallCnn(flatten: 'implicit' | 'explicit' = 'implicit'): ModelSpec | undefined {
  const spec = {
    name: 'cnn',
    input: [1, 6, 6],
    layers: [
      { type: 'conv2d', filters: 2, kernel: 3, padding: 'same' },
      { type: 'relu' },
      { type: 'maxpool2d', size: 2 },
      ...(flatten === 'explicit' ? [{ type: 'flatten' }] : []),
      { type: 'dense', units: 3 },
      { type: 'softmax' },
    ],
  } as unknown as ModelSpec;
  try {
    initParameters(spec, 1);
    return spec;
  } catch {
    return undefined;
  }
}

/** `rows` images of 1×6×6 (flattened) and labels: the label is the quadrant-free "where is the bright bar". */
export function writeImageNpy(dir: string, rows: number, seed: number): { features: string; labels: string } {
  const next = rng(seed);
  const x = new Float32Array(rows * 36);
  const y = new BigInt64Array(rows);
  for (let r = 0; r < rows; r++) {
    const label = Math.floor(next() * 3);
    for (let i = 0; i < 36; i++) x[r * 36 + i] = next() * 0.2;
    for (let c = 0; c < 6; c++) x[r * 36 + label * 2 * 6 + c] = 1;
    y[r] = BigInt(label);
  }
  mkdirSync(dir, { recursive: true });
  const features = join(dir, 'x.npy');
  const labels = join(dir, 'y.npy');
  writeFileSync(features, npy('<f4', [rows, 36], new Uint8Array(x.buffer)));
  writeFileSync(labels, npy('<i8', [rows], new Uint8Array(y.buffer)));
  return { features, labels };
}

/** A version-1.0 .npy file (little-endian data, C order). */
function npy(descr: string, shape: number[], data: Uint8Array): Uint8Array {
  const dims = shape.length === 1 ? `${shape[0]},` : shape.join(', ');
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${dims}), }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64);
  header += '\n';
  const out = new Uint8Array(10 + header.length + data.length);
  out.set([0x93, ...new TextEncoder().encode('NUMPY'), 1, 0], 0);
  new DataView(out.buffer).setUint16(8, header.length, true);
  out.set(new TextEncoder().encode(header), 10);
  out.set(data, 10 + header.length);
  return out;
}
