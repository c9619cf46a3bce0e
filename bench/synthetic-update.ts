/** A synthetic model update: n Gaussian values of RMS `rms` (Box–Muller on Math.random; benches only). */
export function gaussianUpdate(n: number, rms: number): Float32Array {
  const u = new Float32Array(n);
  for (let i = 0; i < n; i += 2) {
    const r = Math.sqrt(-2 * Math.log(Math.random() || 1e-300));
    const t = 2 * Math.PI * Math.random();
    u[i] = r * Math.cos(t) * rms;
    if (i + 1 < n) u[i + 1] = r * Math.sin(t) * rms;
  }
  return u;
}
