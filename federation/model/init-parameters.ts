import { counterUniform } from '../quantize/index.ts';
import { type ModelSpec, modelLayout } from './model-spec.ts';

/**
 * Deterministic initialization from a seed: every weight of layer l is drawn uniformly from
 * [−a, a] with a = √(6 / fan_in) (He/Kaiming uniform, suited to ReLU), biases are zero. Draws come
 * from the counter RNG keyed by (seed, layer index) with the weight index as counter, so the same
 * seed gives the same model on every machine and engine.
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
