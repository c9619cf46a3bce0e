import type { DeepReadonly } from './schema.ts';

/** Freezes `value` and everything reachable from it (objects and arrays), in place; returns it. */
export function deepFreeze<T>(value: T): DeepReadonly<T> {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value as DeepReadonly<T>;
}
