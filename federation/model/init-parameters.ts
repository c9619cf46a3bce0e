import { counterUniform } from '../quantize/index.ts';
import { modelLayout } from './model-layout.ts';
import type { ModelSpec } from './model-spec.ts';

/**
 * Deterministic initialization from a seed: every weight of parameterized layer l (dense or
 * conv2d, counted from 0 in order) is drawn uniformly from [−a, a] with a = √(6 / fan_in) (He/
 * Kaiming uniform, suited to ReLU; fan_in = inputs for dense, channels·kernel² for conv2d), biases
 * are zero. Draws come from the counter RNG keyed by (seed, l) with the weight's index within the
 * layer as counter, so the same seed gives the same model on every machine and engine.
 *
 * @param seed uint32.
 */
export function initParameters(spec: ModelSpec, seed: number): Float32Array {
  const layout = modelLayout(spec);
  const out = new Float32Array(layout.parameterCount);
  layout.layers.forEach((layer, l) => {
    const a = Math.sqrt(6 / layer.inputs);
    const n = layer.inputs * layer.outputs;
    for (let i = 0; i < n; i++) {
      out[layer.weightOffset + i] = (counterUniform(seed >>> 0, l, i) * 2 - 1) * a;
    }
  });
  return out;
}
