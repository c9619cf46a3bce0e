import { z } from 'zod';
import { LAYER_TYPES, MAX_FILTERS, MAX_WIDTH, MAX_WINDOW } from '../../federation/index.ts';

/** The `learning.model` choices: built-in models, or `custom` with `learning.layers`. */
export const MODEL_KINDS = ['2nn', 'logreg', 'mlp', 'cnn', 'custom'] as const;

/** Most layers a `custom` model may list. */
export const MAX_CUSTOM_LAYERS = 256;

const dense = z.strictObject({ type: z.literal('dense'), units: z.int().min(1).max(MAX_WIDTH) });
const conv2d = z.strictObject({
  type: z.literal('conv2d'),
  filters: z.int().min(1).max(MAX_FILTERS),
  /** Side of the square kernel; odd with 'same' padding. */
  kernel: z.int().min(1).max(MAX_WINDOW),
  /** 'same' (the default: output as large as the input, odd kernel) or 'valid' (no padding). */
  padding: z.enum(['same', 'valid']).default('same'),
});
const maxpool2d = z.strictObject({ type: z.literal('maxpool2d'), size: z.int().min(1).max(MAX_WINDOW) });

/**
 * One layer of a `custom` model, as `LayerSpec` (federation/model) describes it: `{type: dense,
 * units}`, `{type: conv2d, filters, kernel, padding}`, `{type: maxpool2d, size}`, `{type:
 * flatten}`, `{type: relu}` or `{type: softmax}`.
 */
export const layerSchema = z.discriminatedUnion(
  'type',
  [
    dense,
    conv2d,
    maxpool2d,
    z.strictObject({ type: z.literal('flatten') }),
    z.strictObject({ type: z.literal('relu') }),
    z.strictObject({ type: z.literal('softmax') }),
  ],
  {
    error: (issue) =>
      issue.code === 'invalid_union'
        ? `must be one of ${LAYER_TYPES.map((t) => `'${t}'`).join(', ')}, got ${JSON.stringify((issue.input as { type?: unknown } | undefined)?.type) ?? 'nothing'}`
        : undefined,
  },
);

/**
 * The layer list of a `custom` model (`learning.layers`), with the checks that need no input
 * shape, each naming its path: an odd kernel for 'same' padding, softmax only last, and a last
 * layer (before an optional softmax) that is dense with at least 2 units (the class logits).
 * Whether the layers fit the input (a conv2d or maxpool2d needs an image, windows no larger than
 * it, the last units equal to the classes) is checked when the model is built (`modelSpecFor`).
 */
export const layersSchema = z
  .array(layerSchema)
  .min(1)
  .max(MAX_CUSTOM_LAYERS)
  .superRefine((layers, ctx) => {
    const issue = (path: PropertyKey[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    layers.forEach((layer, i) => {
      if (layer.type === 'conv2d' && layer.padding === 'same' && layer.kernel % 2 === 0) {
        issue([i, 'kernel'], `must be odd for 'same' padding, got ${layer.kernel}`);
      }
      if (layer.type === 'softmax' && i !== layers.length - 1)
        issue([i, 'type'], 'softmax must be the last layer');
    });
    const last = layers[layers.length - 1]?.type === 'softmax' ? layers.length - 2 : layers.length - 1;
    const logits = layers[last];
    if (logits?.type !== 'dense') {
      issue(
        [Math.max(last, 0)],
        'the last layer (before an optional softmax) must be a dense layer: its units are the class logits',
      );
    } else if (logits.units < 2) {
      issue([last, 'units'], 'the last dense layer gives the class logits: at least 2 units');
    }
  });

/** A validated `learning.layers` entry (zod's output type). */
export type LayerConfig = z.output<typeof layerSchema>;
