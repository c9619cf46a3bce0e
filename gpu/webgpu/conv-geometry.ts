import type { Conv2dShape, PoolShape } from '../engine/index.ts';

/** Derived sizes of a stride-1 convolution (see `Conv2dShape`). */
export interface ConvGeometry {
  /** Zero padding on each side: (kernel − 1) / 2 for 'same', 0 for 'valid'. */
  readonly pad: number;
  readonly outHeight: number;
  readonly outWidth: number;
}

/**
 * Padding and output size of `shape`: out = in + 2·pad − kernel + 1. The caller has validated the
 * shape (odd kernel for 'same', kernel ≤ height and width for 'valid').
 */
export function convGeometry(shape: Conv2dShape): ConvGeometry {
  const pad = shape.padding === 'same' ? (shape.kernel - 1) / 2 : 0;
  return {
    pad,
    outHeight: shape.height + 2 * pad - shape.kernel + 1,
    outWidth: shape.width + 2 * pad - shape.kernel + 1,
  };
}

/** Output size of a max-pooling: ⌊in / size⌋ in each dimension. */
export function poolGeometry(shape: PoolShape): { outHeight: number; outWidth: number } {
  return { outHeight: Math.floor(shape.height / shape.size), outWidth: Math.floor(shape.width / shape.size) };
}
