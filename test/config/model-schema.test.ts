import { describe, expect, it } from 'vitest';
import { type CohortConfigInput, parseConfig } from '../../src/config/index.ts';
import { layersSchema, MODEL_KINDS } from '../../src/config/model-schema.ts';
import { ConfigError } from '../../src/errors/index.ts';

const configOf = (learning: Record<string, unknown>) =>
  parseConfig({ federation: { id: 'models' }, learning } as CohortConfigInput);

/** The CONFIG_INVALID message of parsing `learning`. */
function problem(learning: Record<string, unknown>): string {
  try {
    configOf(learning);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected the configuration to be refused');
}

describe('learning.model and learning.layers', () => {
  it('accepts every model kind; cnn takes no layers, custom needs them', () => {
    expect(MODEL_KINDS).toEqual(['2nn', 'logreg', 'mlp', 'cnn', 'custom']);
    expect(configOf({ model: 'cnn' }).learning.model).toBe('cnn');
    const custom = configOf({
      model: 'custom',
      layers: [
        { type: 'conv2d', filters: 8, kernel: 3 },
        { type: 'relu' },
        { type: 'maxpool2d', size: 2 },
        { type: 'flatten' },
        { type: 'dense', units: 10 },
        { type: 'softmax' },
      ],
    });
    // padding defaults to 'same'.
    expect(custom.learning.layers?.[0]).toEqual({ type: 'conv2d', filters: 8, kernel: 3, padding: 'same' });
    expect(Object.isFrozen(custom.learning.layers)).toBe(true);
  });

  const bad: [string, Record<string, unknown>, string][] = [
    ['custom without layers', { model: 'custom' }, "learning.layers: model 'custom' needs its layers"],
    [
      'layers on another model',
      { model: 'cnn', layers: [{ type: 'dense', units: 10 }] },
      "learning.layers: only model 'custom' takes layers, not 'cnn'",
    ],
    [
      'an unknown layer type',
      { model: 'custom', layers: [{ type: 'conv3d' }, { type: 'dense', units: 10 }] },
      "learning.layers[0].type: must be one of 'dense', 'conv2d', 'maxpool2d', 'flatten', 'relu', 'softmax', got \"conv3d\"",
    ],
    [
      'a missing kernel',
      {
        model: 'custom',
        layers: [
          { type: 'conv2d', filters: 4 },
          { type: 'dense', units: 10 },
        ],
      },
      'learning.layers[0].kernel: is required',
    ],
    [
      'an even kernel with same padding',
      {
        model: 'custom',
        layers: [
          { type: 'relu' },
          { type: 'relu' },
          { type: 'conv2d', filters: 4, kernel: 4 },
          { type: 'dense', units: 10 },
        ],
      },
      "learning.layers[2].kernel: must be odd for 'same' padding, got 4",
    ],
    [
      'a bad padding',
      {
        model: 'custom',
        layers: [
          { type: 'conv2d', filters: 4, kernel: 3, padding: 'full' },
          { type: 'dense', units: 10 },
        ],
      },
      "learning.layers[0].padding: must be one of 'same', 'valid'",
    ],
    [
      'an unknown key in a layer',
      { model: 'custom', layers: [{ type: 'dense', units: 10, activation: 'relu' }] },
      'learning.layers[0].activation: unknown key',
    ],
    [
      'units that are not an integer',
      { model: 'custom', layers: [{ type: 'dense', units: 2.5 }] },
      'learning.layers[0].units: must be an integer, got 2.5',
    ],
    [
      'softmax before the end',
      { model: 'custom', layers: [{ type: 'softmax' }, { type: 'dense', units: 10 }] },
      'learning.layers[0].type: softmax must be the last layer',
    ],
    [
      'a last layer that is not dense',
      { model: 'custom', layers: [{ type: 'dense', units: 10 }, { type: 'relu' }] },
      'learning.layers[1]: the last layer (before an optional softmax) must be a dense layer',
    ],
    [
      'one output',
      { model: 'custom', layers: [{ type: 'dense', units: 1 }, { type: 'softmax' }] },
      'learning.layers[0].units: the last dense layer gives the class logits: at least 2 units',
    ],
    ['an empty list', { model: 'custom', layers: [] }, 'learning.layers: must have at least 1 item'],
  ];
  for (const [what, learning, message] of bad) {
    it(`refuses ${what}, naming the path`, () => {
      expect(problem(learning)).toContain(message);
    });
  }

  it('layersSchema alone parses the LayerSpec shapes', () => {
    expect(
      layersSchema.parse([
        { type: 'maxpool2d', size: 2 },
        { type: 'dense', units: 3 },
      ]),
    ).toEqual([
      { type: 'maxpool2d', size: 2 },
      { type: 'dense', units: 3 },
    ]);
  });
});
