/**
 * One SGD-with-momentum step with the FedProx term over the first `n` entries, in place:
 * g' = g + μ·(w − anchor); v ← β·v + g'; w ← w − η·v. Each update is formed in float64 from the
 * float32 inputs; v is rounded to float32 before it moves w, so w follows the stored velocity.
 * `anchor` is only read when μ ≠ 0.
 */
export function sgdStepInto(
  w: Float32Array,
  grad: Float32Array,
  velocity: Float32Array,
  anchor: Float32Array,
  learningRate: number,
  momentum: number,
  mu: number,
  n: number,
): void {
  const f = Math.fround;
  if (mu === 0) {
    for (let i = 0; i < n; i++) {
      const v = f(momentum * velocity[i]! + grad[i]!);
      velocity[i] = v;
      w[i] = w[i]! - learningRate * v;
    }
    return;
  }
  for (let i = 0; i < n; i++) {
    const wi = w[i]!;
    const v = f(momentum * velocity[i]! + (grad[i]! + mu * (wi - anchor[i]!)));
    velocity[i] = v;
    w[i] = wi - learningRate * v;
  }
}
