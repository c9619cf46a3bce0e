import { classText, type DataContract } from '../config/index.ts';

/** Features per row under `contract`: the tabular features, or channels × height × width. */
export function contractFeatureCount(contract: DataContract): number {
  if (contract.kind === 'image') {
    const { channels, height, width } = contract.image!;
    return channels * height * width;
  }
  return contract.features!.length;
}

/** The contract's classes by their text (as a CSV label is matched): text → class index. */
export function contractLabelMap(contract: DataContract): Record<string, number> {
  const map: Record<string, number> = Object.create(null);
  contract.label.classes.forEach((c, i) => {
    map[classText(c)] = i;
  });
  return map;
}

/**
 * The shape of one example under `contract`, as a file's dimensions after the row count would
 * state it: `[features]` (tabular), `[height, width]` (one-channel images) or
 * `[channels, height, width]`.
 */
export function contractExampleShape(contract: DataContract): number[] {
  if (contract.kind === 'image') {
    const { channels, height, width } = contract.image!;
    return channels === 1 ? [height, width] : [channels, height, width];
  }
  return [contract.features!.length];
}

/** One line naming the contract: `image 1×28×28, 10 classes` or `tabular, 30 features, 2 classes (B, M)`. */
export function describeContract(contract: DataContract): string {
  const classes = contract.label.classes;
  const shown = classes.length <= 10 ? ` (${classes.map(classText).join(', ')})` : '';
  if (contract.kind === 'image') {
    const { channels, height, width } = contract.image!;
    return `image ${channels}×${height}×${width}, ${classes.length} classes${shown}`;
  }
  return `tabular, ${contract.features!.length} features, ${classes.length} classes${shown}`;
}
