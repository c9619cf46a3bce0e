import { z } from 'zod';
import type { DeepReadonly } from './schema.ts';

/** What a federation learns from: named tabular features, or images. */
export const DATA_KINDS = ['tabular', 'image'] as const;

/** Value types of a tabular feature: any finite number, or an integer. */
export const FEATURE_TYPES = ['number', 'integer'] as const;

/**
 * How features are standardized before training: `none`, or `federated` (means and variances of
 * every site summed under encryption before round 1; the data contract only carries the choice).
 */
export const STANDARDIZE_MODES = ['none', 'federated'] as const;

/** Most classes a contract may name (labels are stored as bytes). */
export const MAX_CONTRACT_CLASSES = 256;

/** Largest image side and channel count a contract may name. */
const MAX_IMAGE_SIDE = 65_536;
const MAX_IMAGE_CHANNELS = 1024;

const featureSchema = z.strictObject({
  /** The feature's name: the CSV column a site maps it from (or reads under the same name). */
  name: z.string().min(1),
  type: z.enum(FEATURE_TYPES).default('number'),
});

const imageSchema = z.strictObject({
  channels: z.int().min(1).max(MAX_IMAGE_CHANNELS).default(1),
  height: z.int().min(1).max(MAX_IMAGE_SIDE),
  width: z.int().min(1).max(MAX_IMAGE_SIDE),
});

const classValueSchema = z.union([z.string().min(1), z.int()], {
  error: 'must be a class value (a non-empty string or an integer)',
});

const labelSchema = z.strictObject({
  /** The label's name: for tabular data, the CSV column holding it (a site may map another). */
  name: z.string().min(1).optional(),
  /** Class values in class-index order: class i is the i-th value. */
  classes: z.array(classValueSchema).min(2).max(MAX_CONTRACT_CLASSES),
});

const preprocessingSchema = z.strictObject({
  /** Multiplier applied to every feature after reading (e.g. 1/255 for byte images). */
  scale: z.number().positive().optional(),
  standardize: z.enum(STANDARDIZE_MODES).default('none'),
});

/** The text a class value is matched by in a CSV file: a string as is, an integer in decimal. */
export function classText(value: string | number): string {
  return typeof value === 'number' ? String(value) : value;
}

/**
 * The federation's data contract (the optional top-level `data` section of the federation
 * configuration): what every site's data must look like, pinned into the genesis commit.
 * Cross-field checks, each naming its path: `tabular` needs `features` (and `label.name`) and
 * takes no `image`; `image` needs `image` and takes no `features`; feature names are unique and
 * differ from the label's name; classes are unique (by their text: `1` and `"1"` collide).
 */
export const dataContractSchema = z
  .strictObject({
    kind: z.enum(DATA_KINDS),
    /** Tabular features, in the order the model sees them. */
    features: z.array(featureSchema).min(1).optional(),
    /** Image size (channels × height × width, NCHW rows). */
    image: imageSchema.optional(),
    label: labelSchema,
    preprocessing: preprocessingSchema.prefault({}),
  })
  .superRefine((contract, ctx) => {
    const issue = (path: PropertyKey[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    if (contract.kind === 'tabular') {
      if (contract.features === undefined) issue(['features'], "kind 'tabular' needs its features");
      if (contract.image !== undefined) issue(['image'], "only kind 'image' takes an image size");
      if (contract.label?.name === undefined)
        issue(['label', 'name'], "kind 'tabular' needs the label's column name");
    } else if (contract.kind === 'image') {
      if (contract.image === undefined) issue(['image'], "kind 'image' needs its image size");
      if (contract.features !== undefined) issue(['features'], "only kind 'tabular' takes features");
    }
    const names = new Map<string, number>();
    (Array.isArray(contract.features) ? contract.features : []).forEach((f, i) => {
      if (typeof f?.name !== 'string') return;
      const earlier = names.get(f.name);
      if (earlier !== undefined) {
        issue(['features', i, 'name'], `"${f.name}" is also the name of features[${earlier}]`);
      } else {
        names.set(f.name, i);
      }
      if (f.name === contract.label?.name) issue(['features', i, 'name'], `"${f.name}" is the label's name`);
    });
    const classes = new Map<string, number>();
    (Array.isArray(contract.label?.classes) ? contract.label.classes : []).forEach((c, i) => {
      if (typeof c !== 'string' && typeof c !== 'number') return;
      const text = classText(c);
      const earlier = classes.get(text);
      if (earlier !== undefined) {
        issue(['label', 'classes', i], `${JSON.stringify(c)} is the same class as classes[${earlier}]`);
      } else {
        classes.set(text, i);
      }
    });
  });

/** A validated data contract as plain data (zod's output type of {@link dataContractSchema}). */
export type DataContractData = z.output<typeof dataContractSchema>;

/** What the `data` section may contain before defaults are filled. */
export type DataContractInput = z.input<typeof dataContractSchema>;

/** A validated, frozen data contract (`config.data`). */
export type DataContract = DeepReadonly<DataContractData>;

/** One of {@link DATA_KINDS}. */
export type DataKind = (typeof DATA_KINDS)[number];

/** One of {@link FEATURE_TYPES}. */
export type FeatureType = (typeof FEATURE_TYPES)[number];
