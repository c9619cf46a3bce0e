import type { Dataset } from '../../gpu/engine/index.ts';

/** Rows per class of `data`: entry c counts the rows labelled c (`data.classCount` entries). */
export function classHistogram(data: Dataset): number[] {
  const hist = new Array<number>(data.classCount).fill(0);
  for (let i = 0; i < data.count; i++) {
    const y = data.labels[i]!;
    hist[y] = (hist[y] ?? 0) + 1;
  }
  return hist;
}
