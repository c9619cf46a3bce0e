import type { z } from 'zod';

/** A segment of a configuration path: an object key or an array index. */
export type PathSegment = string | number;

/** Strips default, prefault, optional and nullable wrappers. */
export function unwrapSchema(schema: z.ZodType): z.ZodType {
  let s = schema;
  for (;;) {
    const def = s.def as { type: string; innerType?: z.ZodType };
    if (
      (def.type === 'default' ||
        def.type === 'prefault' ||
        def.type === 'optional' ||
        def.type === 'nullable') &&
      def.innerType !== undefined
    ) {
      s = def.innerType;
    } else {
      return s;
    }
  }
}

/** Keys of `schema` when it is (a wrapped) object schema, else `undefined`. */
export function objectKeys(schema: z.ZodType): string[] | undefined {
  const def = unwrapSchema(schema).def as { type: string; shape?: Record<string, z.ZodType> };
  return def.type === 'object' && def.shape !== undefined ? Object.keys(def.shape) : undefined;
}

/** The schema of `segment` inside `schema` (an object key or an array index), or `undefined`. */
export function childSchema(schema: z.ZodType, segment: PathSegment): z.ZodType | undefined {
  const def = unwrapSchema(schema).def as {
    type: string;
    shape?: Record<string, z.ZodType>;
    element?: z.ZodType;
  };
  if (def.type === 'object' && typeof segment === 'string' && def.shape !== undefined) {
    return Object.hasOwn(def.shape, segment) ? def.shape[segment] : undefined;
  }
  if (def.type === 'array' && typeof segment === 'number') return def.element;
  return undefined;
}

/** The schema at `path` below `schema`, or `undefined` when the path leaves the schema. */
export function schemaAt(schema: z.ZodType, path: readonly PathSegment[]): z.ZodType | undefined {
  let s: z.ZodType | undefined = schema;
  for (const seg of path) {
    if (s === undefined) return undefined;
    s = childSchema(s, seg);
  }
  return s;
}

/** The zod type name of `schema` after unwrapping (`'object'`, `'array'`, `'string'`, ...). */
export function schemaKind(schema: z.ZodType): string {
  return (unwrapSchema(schema).def as { type: string }).type;
}

/** The declared default of `schema` (a fresh copy), if it is wrapped in `.default()`; else `undefined`. */
export function schemaDefault(schema: z.ZodType): unknown {
  let s = schema;
  for (;;) {
    const def = s.def as { type: string; innerType?: z.ZodType; defaultValue?: unknown };
    if (def.type === 'default') return structuredClone(def.defaultValue);
    if ((def.type === 'optional' || def.type === 'nullable') && def.innerType !== undefined) {
      s = def.innerType;
    } else {
      return undefined;
    }
  }
}
