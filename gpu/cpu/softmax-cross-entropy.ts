/**
 * Softmax cross-entropy of the first `batch` rows of `logits` ([batch][classes]): returns the SUM
 * over rows of −log softmax(logits)[label] (float64; divide by `batch` for the mean) and, when
 * `dlogits` is given, writes (softmax − one-hot)·`scale` into it (the trainer passes 1/batch).
 * Max-subtracted and computed in float64, so large logits neither overflow nor lose the answer.
 * Labels are trusted to lie in [0, classes) (checked at the public boundary).
 */
export function softmaxCrossEntropyInto(
  logits: Float32Array,
  labels: Uint8Array,
  batch: number,
  classes: number,
  dlogits: Float32Array | null,
  scale: number,
): number {
  let total = 0;
  for (let r = 0; r < batch; r++) {
    const base = r * classes;
    let max = logits[base]!;
    for (let c = 1; c < classes; c++) {
      const v = logits[base + c]!;
      if (v > max) max = v;
    }
    let sum = 0;
    for (let c = 0; c < classes; c++) sum += Math.exp(logits[base + c]! - max);
    const label = labels[r]!;
    const logSum = Math.log(sum);
    total += logSum - (logits[base + label]! - max);
    if (dlogits !== null) {
      const inverse = scale / sum;
      for (let c = 0; c < classes; c++) {
        const p = Math.exp(logits[base + c]! - max) * inverse;
        dlogits[base + c] = c === label ? p - scale : p;
      }
    }
  }
  return total;
}

/**
 * Rows of `logits` whose arg-max (ties → lowest index) equals the label; with `confusion`
 * (classes × classes, [label][prediction]) each row is also counted there.
 */
export function countCorrect(
  logits: Float32Array,
  labels: Uint8Array,
  batch: number,
  classes: number,
  confusion?: Uint32Array,
): number {
  let correct = 0;
  for (let r = 0; r < batch; r++) {
    const base = r * classes;
    let best = 0;
    let max = logits[base]!;
    for (let c = 1; c < classes; c++) {
      const v = logits[base + c]!;
      if (v > max) {
        max = v;
        best = c;
      }
    }
    if (best === labels[r]) correct++;
    if (confusion !== undefined) confusion[labels[r]! * classes + best]!++;
  }
  return correct;
}
