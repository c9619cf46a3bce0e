import { describe, expect, it } from 'vitest';
import { FEDAVG_CNN, MNIST_2NN, parameterCount } from '../../../federation/index.ts';
import { type CohortConfigInput, parseConfig } from '../../../src/config/index.ts';
import { ConfigError } from '../../../src/errors/index.ts';
import { modelSpecFor } from '../../../src/round/index.ts';

const configOf = (learning: Record<string, unknown>, data?: unknown) =>
  parseConfig({
    federation: { id: 'models' },
    learning,
    ...(data === undefined ? {} : { data }),
  } as CohortConfigInput);

const IMAGE = {
  kind: 'image',
  image: { channels: 3, height: 12, width: 12 },
  label: { classes: ['a', 'b', 'c'] },
};
const TABULAR = {
  kind: 'tabular',
  features: [{ name: 'x' }, { name: 'y' }, { name: 'z' }],
  label: { name: 'k', classes: [0, 1] },
};

/** The ConfigError `modelSpecFor` throws, or a failure when it throws none. */
function refusal(learning: Record<string, unknown>, data?: unknown): ConfigError {
  try {
    modelSpecFor(configOf(learning, data));
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected modelSpecFor to refuse');
}

describe('modelSpecFor without a data contract (MNIST)', () => {
  it('2nn is MNIST_2NN, cnn is the FedAvg CNN (1,663,370 parameters)', () => {
    expect(modelSpecFor(configOf({}))).toBe(MNIST_2NN);
    const cnn = modelSpecFor(configOf({ model: 'cnn' }));
    expect(cnn).toEqual(FEDAVG_CNN);
    expect(parameterCount(cnn)).toBe(1_663_370);
    expect(modelSpecFor(configOf({ model: 'logreg' }))).toMatchObject({
      input: [784],
      layers: [{ units: 10 }],
    });
    expect(parameterCount(modelSpecFor(configOf({ model: 'mlp', hidden: [32] })))).toBe(784 * 32 + 32 + 330);
  });

  it('custom layers run on [1, 28, 28] and must end in 10 units', () => {
    const layers = [
      { type: 'conv2d', filters: 4, kernel: 5, padding: 'valid' },
      { type: 'relu' },
      { type: 'maxpool2d', size: 4 },
      { type: 'dense', units: 10 },
    ];
    const spec = modelSpecFor(configOf({ model: 'custom', layers }));
    expect(spec.input).toEqual([1, 28, 28]);
    expect(parameterCount(spec)).toBe(4 * 25 + 4 + 4 * 6 * 6 * 10 + 10);
    const wrong = refusal({ model: 'custom', layers: [{ type: 'dense', units: 3 }] });
    expect(wrong.details['path']).toBe('learning.layers[0].units');
    expect(wrong.message).toMatch(/learning\.layers\[0\]\.units is 3, but MNIST has 10 classes/);
  });

  it('a custom model that does not fit the input fails naming the field', () => {
    const big = refusal({
      model: 'custom',
      layers: [
        { type: 'maxpool2d', size: 16 },
        { type: 'maxpool2d', size: 2 },
        { type: 'dense', units: 10 },
      ],
    });
    expect(big.code).toBe('CONFIG_INVALID');
    expect(big.details['path']).toBe('learning.layers[1].size');
    expect(big.message).toMatch(/learning\.layers\[1\]\.size 2 is larger than its 1×1 input/);
    const flat = refusal({
      model: 'custom',
      layers: [{ type: 'flatten' }, { type: 'conv2d', filters: 2, kernel: 3 }, { type: 'dense', units: 10 }],
    });
    expect(flat.details['path']).toBe('learning.layers[1]');
    expect(flat.message).toMatch(/needs a \[channels, height, width\] input, got \[784\]/);
  });
});

describe('modelSpecFor with a data contract', () => {
  it('takes the image shape and the classes from the contract', () => {
    const cnn = modelSpecFor(configOf({ model: 'cnn' }, IMAGE));
    expect(cnn.input).toEqual([3, 12, 12]);
    expect(cnn.layers.at(-2)).toEqual({ type: 'dense', units: 3 });
    // 3×12×12 → pool → 6×6 → pool → 3×3: 64·9 inputs to the dense 512.
    expect(parameterCount(cnn)).toBe(32 * 75 + 32 + (64 * 800 + 64) + (576 * 512 + 512) + (512 * 3 + 3));
    expect(modelSpecFor(configOf({}, IMAGE))).toMatchObject({ name: '2nn', input: [432] });
    expect(modelSpecFor(configOf({ model: 'logreg' }, TABULAR))).toMatchObject({
      input: [3],
      layers: [{ type: 'dense', units: 2 }],
    });
  });

  it('refuses the CNN on tabular data and a custom model with the wrong classes', () => {
    const tabular = refusal({ model: 'cnn' }, TABULAR);
    expect(tabular.details['path']).toBe('learning.model');
    expect(tabular.message).toMatch(
      /learning\.model 'cnn' needs an image input.*input \[3\] \(the data contract\)/,
    );
    const classes = refusal({ model: 'custom', layers: [{ type: 'dense', units: 10 }] }, IMAGE);
    expect(classes.message).toMatch(/units is 10, but the data contract has 3 classes/);
    const small = refusal({ model: 'cnn' }, { ...IMAGE, image: { channels: 1, height: 3, width: 3 } });
    expect(small.details['path']).toBe('learning.model');
    expect(small.message).toMatch(
      /learning\.model 'cnn' on input \[1, 3, 3\].*size 2 is larger than its 1×1 input/,
    );
  });
});
