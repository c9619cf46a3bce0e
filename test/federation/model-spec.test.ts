import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  assertParameters,
  counterUniform,
  defineModel,
  denseWidths,
  describeModel,
  FEDAVG_CNN,
  initParameters,
  type LayerSpec,
  logisticRegression,
  MNIST_2NN,
  type ModelSpec,
  mlp,
  modelLayout,
  parameterCount,
} from '../../federation/index.ts';
import { InvalidArgumentError } from '../../src/errors/index.ts';

const sha256 = (a: Float32Array): string =>
  createHash('sha256')
    .update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength))
    .digest('hex');

describe('model specs', () => {
  it('known parameter counts: the FedAvg CNN 1,663,370, the 2NN 199,210', () => {
    expect(parameterCount(FEDAVG_CNN)).toBe(1_663_370);
    expect(parameterCount(MNIST_2NN)).toBe(199_210);
    expect(parameterCount(logisticRegression(784, 10))).toBe(7_850);
    expect(parameterCount(mlp(3, [4], 2))).toBe(3 * 4 + 4 + 4 * 2 + 2);
  });

  it('the 2NN is dense 200, relu, dense 200, relu, dense 10 on [784]', () => {
    expect(MNIST_2NN).toEqual({
      name: '2nn',
      input: [784],
      layers: [
        { type: 'dense', units: 200 },
        { type: 'relu' },
        { type: 'dense', units: 200 },
        { type: 'relu' },
        { type: 'dense', units: 10 },
      ],
    });
    expect(Object.isFrozen(MNIST_2NN.layers[0])).toBe(true);
  });

  it('initParameters of the MLPs is unchanged, bit for bit (hashes from before convolutions existed)', () => {
    expect(sha256(initParameters(MNIST_2NN, 1))).toBe(
      '5ba9d80090f4ac0768ffa5e4204a8a5b99a41b8be73f58805a3367ca19744e59',
    );
    expect(sha256(initParameters(MNIST_2NN, 42))).toBe(
      '99b8948462f700b4017164049deb9063ca1f17961c236d729df2bb5a0e7296bb',
    );
    expect(sha256(initParameters(mlp(6, [5, 4], 3), 42))).toBe(
      '0a53fd500eca9d36eb67946b127feb12918defedb45b00710376c5125e4bf182',
    );
    expect(sha256(initParameters(logisticRegression(784, 10), 3))).toBe(
      'c85ce7f3dcd5d96a16d6b4834a6b199e42b95f7ead533366cf6ff7d8bc1e3ede',
    );
  });

  it("the CNN's layout: PyTorch weight shapes, fan-ins, offsets and every op's shapes", () => {
    const layout = modelLayout(FEDAVG_CNN);
    expect(layout.inputSize).toBe(784);
    expect(layout.classes).toBe(10);
    expect(layout.input).toEqual([1, 28, 28]);
    expect(layout.layers.map((l) => [l.kind, l.layerIndex, l.inputs, l.outputs, l.weightShape])).toEqual([
      ['conv2d', 0, 25, 32, [32, 1, 5, 5]],
      ['conv2d', 3, 800, 64, [64, 32, 5, 5]],
      ['dense', 7, 3136, 512, [512, 3136]],
      ['dense', 9, 512, 10, [10, 512]],
    ]);
    let offset = 0;
    for (const l of layout.layers) {
      expect(l.weightOffset).toBe(offset);
      expect(l.biasOffset).toBe(offset + l.inputs * l.outputs);
      offset = l.biasOffset + l.outputs;
    }
    expect(offset).toBe(layout.parameterCount);
    expect(layout.ops.map((op) => [op.layerIndex, op.inputShape, op.outputShape, op.slice !== null])).toEqual(
      [
        [0, [1, 28, 28], [32, 28, 28], true],
        [1, [32, 28, 28], [32, 28, 28], false],
        [2, [32, 28, 28], [32, 14, 14], false],
        [3, [32, 14, 14], [64, 14, 14], true],
        [4, [64, 14, 14], [64, 14, 14], false],
        [5, [64, 14, 14], [64, 7, 7], false],
        [6, [64, 7, 7], [3136], false],
        [7, [3136], [512], true],
        [8, [512], [512], false],
        [9, [512], [10], true],
        [10, [10], [10], false],
      ],
    );
    expect(layout.ops[3]!.slice).toBe(layout.layers[1]);
  });

  it("He-uniform draws for convolutions use fan_in = channels·k² and the layer's own RNG stream", () => {
    const w = initParameters(FEDAVG_CNN, 7);
    const layout = modelLayout(FEDAVG_CNN);
    layout.layers.forEach((l, k) => {
      const a = Math.sqrt(6 / l.inputs);
      const weights = w.subarray(l.weightOffset, l.biasOffset);
      const largest = weights.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
      expect(largest).toBeLessThanOrEqual(Math.fround(a));
      expect(largest).toBeGreaterThan(0.9 * a);
      for (const i of [0, 1, weights.length - 1]) {
        expect(weights[i]).toBe(Math.fround((counterUniform(7, k, i) * 2 - 1) * a));
      }
      expect(w.subarray(l.biasOffset, l.biasOffset + l.outputs).every((v) => v === 0)).toBe(true);
    });
  });

  it('denseWidths: the widths of an MLP, null for anything else', () => {
    expect(denseWidths(MNIST_2NN)).toEqual([784, 200, 200, 10]);
    expect(denseWidths(logisticRegression(5, 3))).toEqual([5, 3]);
    expect(denseWidths(FEDAVG_CNN)).toBeNull();
    const image = (layers: LayerSpec[]): ModelSpec => defineModel('m', [1, 4, 4], layers);
    // Flattened explicitly or implicitly, with a trailing softmax: still an MLP.
    expect(
      denseWidths(image([{ type: 'flatten' }, { type: 'dense', units: 3 }, { type: 'softmax' }])),
    ).toEqual([16, 3]);
    expect(
      denseWidths(image([{ type: 'dense', units: 5 }, { type: 'relu' }, { type: 'dense', units: 2 }])),
    ).toEqual([16, 5, 2]);
    // A missing or extra ReLU is not.
    expect(
      denseWidths(
        image([
          { type: 'dense', units: 5 },
          { type: 'dense', units: 2 },
        ]),
      ),
    ).toBeNull();
    expect(denseWidths(image([{ type: 'relu' }, { type: 'dense', units: 2 }]))).toBeNull();
    expect(
      denseWidths(
        image([{ type: 'dense', units: 5 }, { type: 'relu' }, { type: 'relu' }, { type: 'dense', units: 2 }]),
      ),
    ).toBeNull();
  });

  it('describeModel: widths for MLPs, layer tokens otherwise; never throws', () => {
    expect(describeModel(MNIST_2NN)).toBe('784-200-200-10');
    expect(describeModel(FEDAVG_CNN)).toBe(
      'conv5x5x32-relu-pool2-conv5x5x64-relu-pool2-flatten-dense512-relu-dense10-softmax',
    );
    const valid = defineModel(
      'v',
      [1, 5, 5],
      [
        { type: 'conv2d', filters: 2, kernel: 3, padding: 'valid' },
        { type: 'dense', units: 2 },
      ],
    );
    expect(describeModel(valid)).toBe('conv3x3x2:valid-dense2');
    expect(describeModel({ name: 'bad', input: [3], layers: [{ type: 'relu' }] })).toBe('relu');
    expect(describeModel(null as unknown as ModelSpec)).toBe('');
  });

  it('assertParameters names both lengths and the architecture', () => {
    expect(() => assertParameters(MNIST_2NN, new Float32Array(1000))).toThrow(
      /parameters length 1000, model 2nn \[784-200-200-10\] expects 199210/,
    );
    expect(() => assertParameters(FEDAVG_CNN, new Float32Array(3), 'initial')).toThrow(
      /initial length 3, model cnn \[conv5x5x32-.*-softmax\] expects 1663370/,
    );
  });
});

describe('model spec validation', () => {
  const bad: [string, unknown, RegExp][] = [
    [
      'input rank',
      { input: [2, 3], layers: [{ type: 'dense', units: 2 }] },
      /model\.input must be \[features\] or \[channels, height, width\]/,
    ],
    [
      'input dimension',
      { input: [1, 0, 4], layers: [{ type: 'dense', units: 2 }] },
      /model\.input\[1\] is 0, must be an integer/,
    ],
    ['no layers', { input: [4], layers: [] }, /model\.layers must list at least one layer/],
    [
      'unknown type',
      { input: [4], layers: [{ type: 'conv3d' }] },
      /model\.layers\[0\]\.type must be one of dense, conv2d, maxpool2d, flatten, relu, softmax, got "conv3d"/,
    ],
    [
      'units',
      { input: [4], layers: [{ type: 'dense', units: 2.5 }] },
      /model\.layers\[0\]\.units is 2\.5, must be an integer/,
    ],
    [
      'conv on a flat input',
      {
        input: [784],
        layers: [
          { type: 'conv2d', filters: 2, kernel: 3, padding: 'same' },
          { type: 'dense', units: 2 },
        ],
      },
      /model\.layers\[0\] \(conv2d\) needs a \[channels, height, width\] input, got \[784\]/,
    ],
    [
      'even same kernel',
      {
        input: [1, 8, 8],
        layers: [
          { type: 'conv2d', filters: 2, kernel: 4, padding: 'same' },
          { type: 'dense', units: 2 },
        ],
      },
      /model\.layers\[0\]\.kernel must be odd for 'same' padding, got 4/,
    ],
    [
      'kernel too large',
      {
        input: [1, 3, 8],
        layers: [
          { type: 'conv2d', filters: 2, kernel: 5, padding: 'valid' },
          { type: 'dense', units: 2 },
        ],
      },
      /model\.layers\[0\]\.kernel 5 is larger than its 3×8 input/,
    ],
    [
      'padding',
      {
        input: [1, 8, 8],
        layers: [
          { type: 'conv2d', filters: 2, kernel: 3, padding: 'full' },
          { type: 'dense', units: 2 },
        ],
      },
      /model\.layers\[0\]\.padding must be 'same' or 'valid', got "full"/,
    ],
    [
      'filters',
      {
        input: [1, 8, 8],
        layers: [
          { type: 'conv2d', filters: 0, kernel: 3, padding: 'same' },
          { type: 'dense', units: 2 },
        ],
      },
      /model\.layers\[0\]\.filters is 0/,
    ],
    [
      'pool after flatten',
      {
        input: [1, 8, 8],
        layers: [{ type: 'flatten' }, { type: 'maxpool2d', size: 2 }, { type: 'dense', units: 2 }],
      },
      /model\.layers\[1\] \(maxpool2d\) needs a \[channels, height, width\] input, got \[64\]/,
    ],
    [
      'pool too large',
      {
        input: [1, 8, 8],
        layers: [
          { type: 'maxpool2d', size: 9 },
          { type: 'dense', units: 2 },
        ],
      },
      /model\.layers\[0\]\.size 9 is larger than its 8×8 input/,
    ],
    [
      'softmax not last',
      { input: [4], layers: [{ type: 'softmax' }, { type: 'dense', units: 2 }] },
      /model\.layers\[0\] \(softmax\) must be the last layer/,
    ],
    [
      'last not dense',
      { input: [4], layers: [{ type: 'dense', units: 3 }, { type: 'relu' }] },
      /last layer \(before an optional softmax\) must be a dense layer of at least 2 units \(the class logits\), got relu/,
    ],
    ['one class', { input: [4], layers: [{ type: 'dense', units: 1 }, { type: 'softmax' }] }, /got dense 1/],
  ];
  for (const [what, spec, message] of bad) {
    it(`rejects ${what}, naming the field`, () => {
      const full = { name: 'x', ...(spec as object) } as ModelSpec;
      expect(() => modelLayout(full)).toThrow(InvalidArgumentError);
      expect(() => modelLayout(full)).toThrow(message);
    });
  }

  it('uses the caller’s path prefix, and defineModel validates', () => {
    expect(() =>
      modelLayout({ name: 'x', input: [4], layers: [{ type: 'dense', units: 0 }] }, 'learning'),
    ).toThrow(/learning\.layers\[0\]\.units is 0/);
    expect(() => defineModel('x', [4], [{ type: 'relu' }])).toThrow(InvalidArgumentError);
    expect(() => mlp(4, [0], 2)).toThrow(/model\.layers\[0\]\.units is 0/);
  });
});
