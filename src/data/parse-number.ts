import { DataError, type DataErrorLocation } from './data-error.ts';

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const NON_FINITE = /^[+-]?(nan|inf|infinity)$/i;

/**
 * Parses one numeric CSV field (surrounding spaces allowed) as a float32-representable number.
 * Empty, `NaN`, `Inf`/`Infinity` or beyond float32 range → `DATA_NON_FINITE`; anything that is
 * not a decimal number (`abc`, `0x10`, `1,5`) → `DATA_FORMAT`. `where` names file, line and field.
 */
export function parseFeature(raw: string, where: DataErrorLocation): number {
  const s = raw.trim();
  if (s === '') throw DataError.at('DATA_NON_FINITE', where, 'value is empty', { details: { value: raw } });
  if (NON_FINITE.test(s)) {
    throw DataError.at('DATA_NON_FINITE', where, `${JSON.stringify(raw)} is not finite`, {
      details: { value: raw },
    });
  }
  if (!DECIMAL.test(s)) {
    throw DataError.at('DATA_FORMAT', where, `${JSON.stringify(raw)} is not a number`, {
      details: { value: raw },
    });
  }
  const v = Number(s);
  if (!Number.isFinite(Math.fround(v))) {
    throw DataError.at('DATA_NON_FINITE', where, `${JSON.stringify(raw)} is beyond float32 range`, {
      details: { value: raw },
    });
  }
  return v;
}

/**
 * Parses a label field: an integer numeral (`3`, `3.0`, ` +3 `) in [0, classCount). Anything else
 * (empty, `abc`, `1.5`, `-1`, `≥ classCount`) → `DATA_LABEL_RANGE` naming file, line and field.
 */
export function parseLabel(raw: string, classCount: number, where: DataErrorLocation): number {
  const s = raw.trim();
  const v = DECIMAL.test(s) ? Number(s) : Number.NaN;
  if (!Number.isInteger(v) || v < 0 || v >= classCount) {
    const what = s === '' ? 'label is empty' : `label ${JSON.stringify(raw)}`;
    throw DataError.at('DATA_LABEL_RANGE', where, `${what}; labels must be integers in [0, ${classCount})`, {
      details: { value: raw, classCount },
    });
  }
  return v;
}
