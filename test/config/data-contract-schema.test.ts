import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  type CohortConfigInput,
  type DataContractInput,
  dataContractSchema,
  parseConfig,
} from '../../src/config/index.ts';
import { canonicalJson, DATA_CONTRACT_DOMAIN, dataContractDigest } from '../../src/data/index.ts';
import { ConfigError } from '../../src/errors/index.ts';

const TABULAR: DataContractInput = {
  kind: 'tabular',
  features: [
    { name: 'radius_mean', type: 'number' },
    { name: 'age', type: 'integer' },
  ],
  label: { name: 'diagnosis', classes: ['B', 'M'] },
};

const IMAGE: DataContractInput = {
  kind: 'image',
  image: { channels: 1, height: 28, width: 28 },
  label: { classes: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] },
  preprocessing: { scale: 1 / 255 },
};

function config(data: unknown): CohortConfigInput {
  return { federation: { id: 'contract' }, data } as CohortConfigInput;
}

/** The `path: message` lines of the CONFIG_INVALID error parsing `data` gives. */
function issues(data: unknown): string[] {
  try {
    parseConfig(config(data));
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).message
      .split('\n')
      .slice(1)
      .map((l) => l.trim());
  }
  throw new Error('expected the configuration to be refused');
}

describe('data contract schema (the `data` section)', () => {
  it('is optional, and fills defaults in a valid contract', () => {
    expect(parseConfig({ federation: { id: 'contract' } }).data).toBeUndefined();
    const tabular = parseConfig(config({ ...TABULAR, features: [{ name: 'x' }] })).data!;
    expect(tabular.features).toEqual([{ name: 'x', type: 'number' }]);
    expect(tabular.preprocessing).toEqual({ standardize: 'none' });
    const image = parseConfig(config(IMAGE)).data!;
    expect(image.image).toEqual({ channels: 1, height: 28, width: 28 });
    expect(image.preprocessing.scale).toBe(1 / 255);
    expect(Object.isFrozen(image.label.classes)).toBe(true);
  });

  it('needs features for tabular data and an image size for images, each named by path', () => {
    expect(issues({ kind: 'tabular', label: { name: 'y', classes: [0, 1] } })).toEqual([
      "data.features: kind 'tabular' needs its features",
    ]);
    expect(issues({ ...TABULAR, label: { classes: ['B', 'M'] } })).toEqual([
      "data.label.name: kind 'tabular' needs the label's column name",
    ]);
    expect(issues({ ...TABULAR, image: { height: 2, width: 2 } })).toEqual([
      "data.image: only kind 'image' takes an image size",
    ]);
    expect(issues({ kind: 'image', label: { classes: [0, 1] } })).toEqual([
      "data.image: kind 'image' needs its image size",
    ]);
    expect(issues({ ...IMAGE, features: [{ name: 'x' }] })).toEqual([
      "data.features: only kind 'tabular' takes features",
    ]);
    expect(issues({ ...IMAGE, kind: 'audio' })).toEqual([
      "data.kind: must be one of 'tabular', 'image', got \"audio\"",
    ]);
  });

  it('needs at least 2 classes, unique classes and unique feature names', () => {
    expect(issues({ ...IMAGE, label: { classes: [0] } })).toEqual([
      'data.label.classes: must have at least 2 items',
    ]);
    expect(issues({ ...IMAGE, label: { classes: [0, 1, '1'] } })).toEqual([
      'data.label.classes[2]: "1" is the same class as classes[1]',
    ]);
    expect(
      issues({
        ...TABULAR,
        features: [{ name: 'a' }, { name: 'b' }, { name: 'a' }, { name: 'diagnosis' }],
      }),
    ).toEqual([
      'data.features[2].name: "a" is also the name of features[0]',
      'data.features[3].name: "diagnosis" is the label\'s name',
    ]);
    expect(issues({ ...TABULAR, features: [{ name: 'x', type: 'float' }] })).toEqual([
      "data.features[0].type: must be one of 'number', 'integer', got \"float\"",
    ]);
    expect(issues({ ...IMAGE, label: { classes: [0, 1.5] } })[0]).toMatch(/^data\.label\.classes\[1\]: /);
  });

  it('refuses unknown keys with a suggestion, and a scale that is not positive', () => {
    expect(issues({ ...IMAGE, imge: {} })).toEqual(["data.imge: unknown key (did you mean 'image'?)"]);
    expect(issues({ ...IMAGE, preprocessing: { scale: 0 } })).toEqual([
      'data.preprocessing.scale: must be > 0',
    ]);
    expect(issues({ ...IMAGE, preprocessing: { standardize: 'local' } })).toEqual([
      "data.preprocessing.standardize: must be one of 'none', 'federated', got \"local\"",
    ]);
  });
});

describe('dataContractDigest', () => {
  const parse = (input: DataContractInput) => dataContractSchema.parse(input);

  it('is SHA-256 over the domain tag and the canonical JSON of the contract', () => {
    const contract = parse(TABULAR);
    const expected = createHash('sha256')
      .update('cohort/v1/data-contract\0')
      .update(canonicalJson(contract))
      .digest();
    expect(DATA_CONTRACT_DOMAIN).toBe('cohort/v1/data-contract\0');
    expect(Buffer.from(dataContractDigest(contract)).equals(expected)).toBe(true);
    expect(canonicalJson({ b: [1, 'x'], a: { d: null, c: 0.5 }, u: undefined })).toBe(
      '{"a":{"c":0.5,"d":null},"b":[1,"x"]}',
    );
  });

  it('ignores key order and spelt-out defaults, and changes with anything else', () => {
    const hex = (input: DataContractInput) => Buffer.from(dataContractDigest(parse(input))).toString('hex');
    const base = hex(TABULAR);
    expect(
      hex({
        preprocessing: { standardize: 'none' },
        label: { classes: ['B', 'M'], name: 'diagnosis' },
        features: [
          { type: 'number', name: 'radius_mean' },
          { type: 'integer', name: 'age' },
        ],
        kind: 'tabular',
      }),
    ).toBe(base);
    const changed = [
      { ...TABULAR, label: { name: 'diagnosis', classes: ['M', 'B'] } },
      { ...TABULAR, label: { name: 'dx', classes: ['B', 'M'] } },
      { ...TABULAR, features: [...TABULAR.features!].reverse() },
      { ...TABULAR, features: [TABULAR.features![0]!, { name: 'age', type: 'number' as const }] },
      { ...TABULAR, preprocessing: { scale: 0.5 } },
      { ...TABULAR, preprocessing: { standardize: 'federated' as const } },
    ].map(hex);
    expect(new Set([base, ...changed]).size).toBe(changed.length + 1);
  });
});
