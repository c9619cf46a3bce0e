/** a = max(z, 0) over the first `n` entries; `a` may be `z` itself. */
export function reluInto(z: Float32Array, a: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const v = z[i]!;
    a[i] = Math.max(v, 0);
  }
}

/**
 * dz = da where the pre-activation z > 0, else 0, over the first `n` entries; `dz` may be `da`
 * itself (the trainer masks in place).
 */
export function reluBackwardInto(z: Float32Array, da: Float32Array, dz: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) dz[i] = z[i]! > 0 ? da[i]! : 0;
}
