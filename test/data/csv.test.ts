import { describe, expect, it } from 'vitest';
import {
  DataError,
  parseCsvRecords,
  readCsvColumns,
  readCsvDataset,
  readCsvTable,
} from '../../src/data/index.ts';

const fixture = (name: string): string => `test/fixtures/csv/${name}`;

function thrown(fn: () => unknown): DataError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(DataError);
    return e as DataError;
  }
  throw new Error('expected a DataError');
}

describe('parseCsvRecords', () => {
  it('handles quoted commas, doubled quotes, line breaks in quotes, CRLF and blank lines', () => {
    const text = 'a,b\r\n"x, y","say ""hi"""\r\n\r\n"multi\r\nline",2\r\nlast,\r\n';
    expect(parseCsvRecords(text, 'mem.csv')).toEqual([
      { line: 1, fields: ['a', 'b'] },
      { line: 2, fields: ['x, y', 'say "hi"'] },
      { line: 4, fields: ['multi\r\nline', '2'] },
      { line: 6, fields: ['last', ''] },
    ]);
  });

  it('accepts a BOM, LF, lone CR and no final line break; keeps fields verbatim', () => {
    expect(parseCsvRecords('\ufeffa,b\n 1 ,""\r2,3', 'm')).toEqual([
      { line: 1, fields: ['a', 'b'] },
      { line: 2, fields: [' 1 ', ''] },
      { line: 3, fields: ['2', '3'] },
    ]);
  });

  it('names line and field of bad quoting', () => {
    expect(thrown(() => parseCsvRecords('a,b\n1,"x"y\n', 'm.csv')).message).toBe(
      'm.csv line 2, field "b": unexpected "y" after the closing quote (expected , or end of line)',
    );
    expect(thrown(() => parseCsvRecords('a,b\n1,x"y\n', 'm.csv')).message).toMatch(
      /^m\.csv line 2, field "b": quote inside an unquoted field/,
    );
  });
});

describe('readCsvDataset', () => {
  it('reads quoted fields and skips the text column it is told to drop', () => {
    const csv = readCsvDataset(fixture('quoted.csv'), {
      labelColumn: 'label',
      dropColumns: ['note, free text'],
    });
    expect(csv.featureNames).toEqual(['id', 'age']);
    expect(csv.rows).toBe(4);
    expect(Array.from(csv.lines)).toEqual([2, 3, 5, 6]);
    const d = csv.dataset;
    expect(d).toMatchObject({ count: 4, featureCount: 2, classCount: 2 });
    expect(Array.from(d.features)).toEqual([1, 34.5, 2, 41, 3, -25, 4, 7]);
    expect(Array.from(d.labels)).toEqual([0, 1, 1, 0]);
  });

  it('reads CRLF files and quoted numbers', () => {
    const { dataset: d } = readCsvDataset(fixture('crlf.csv'), { labelColumn: 'label', classCount: 3 });
    expect(d).toMatchObject({ count: 3, featureCount: 2, classCount: 3 });
    expect(Array.from(d.features)).toEqual([1.5, 2, 3, 4, -1, 0.5]);
    expect(Array.from(d.labels)).toEqual([1, 0, 1]);
  });

  it('honours featureColumns order and a label map', () => {
    const csv = readCsvDataset(fixture('labels-text.csv'), {
      labelColumn: 'diagnosis',
      labelMap: { M: 0, B: 1 },
    });
    expect(Array.from(csv.dataset.labels)).toEqual([0, 1, 1]);
    expect(csv.dataset.classCount).toBe(2);
    const sel = readCsvDataset(fixture('bad-number.csv'), {
      labelColumn: 'label',
      featureColumns: ['weight'],
    });
    expect(sel.featureNames).toEqual(['weight']);
    expect(Array.from(sel.dataset.features)).toEqual([70.5, 82, 60]);
  });

  it('DATA_FORMAT: a non-number names file, line and field', () => {
    const e = thrown(() =>
      readCsvDataset(fixture('bad-number.csv'), { labelColumn: 'label', dropColumns: ['name'] }),
    );
    expect(e.code).toBe('DATA_FORMAT');
    expect(e.message).toBe('test/fixtures/csv/bad-number.csv line 4, field "age": "abc" is not a number');
    expect(e.details).toMatchObject({ file: fixture('bad-number.csv'), line: 4, field: 'age', value: 'abc' });
  });

  it('DATA_FORMAT: an unknown column names the header line', () => {
    const e = thrown(() => readCsvDataset(fixture('bad-number.csv'), { labelColumn: 'outcome' }));
    expect(e.code).toBe('DATA_FORMAT');
    expect(e.message).toBe(
      'test/fixtures/csv/bad-number.csv line 1, field "outcome": label column is not in the header (columns: name, age, weight, label)',
    );
  });

  it('DATA_FORMAT: an unterminated quote names where the field starts', () => {
    const e = thrown(() => readCsvDataset(fixture('unterminated.csv'), { labelColumn: 'label' }));
    expect(e.code).toBe('DATA_FORMAT');
    expect(e.message).toBe(
      'test/fixtures/csv/unterminated.csv line 3, field "note": quoted field is never closed (missing ")',
    );
  });

  it('DATA_NON_FINITE: empty and NaN fields', () => {
    const empty = thrown(() => readCsvDataset(fixture('empty-field.csv'), { labelColumn: 'label' }));
    expect(empty.code).toBe('DATA_NON_FINITE');
    expect(empty.message).toBe('test/fixtures/csv/empty-field.csv line 3, field "weight": value is empty');
    const nan = thrown(() => readCsvDataset(fixture('nan-field.csv'), { labelColumn: 'label' }));
    expect(nan.code).toBe('DATA_NON_FINITE');
    expect(nan.message).toBe('test/fixtures/csv/nan-field.csv line 4, field "weight": "NaN" is not finite');
  });

  it('DATA_LABEL_RANGE: a label ≥ classCount or outside the label map', () => {
    const e = thrown(() =>
      readCsvDataset(fixture('label-range.csv'), { labelColumn: 'label', classCount: 2 }),
    );
    expect(e.code).toBe('DATA_LABEL_RANGE');
    expect(e.message).toBe(
      'test/fixtures/csv/label-range.csv line 4, field "label": label "2"; labels must be integers in [0, 2)',
    );
    // Without classCount it is inferred (max + 1).
    expect(readCsvDataset(fixture('label-range.csv'), { labelColumn: 'label' }).dataset.classCount).toBe(3);
    const m = thrown(() =>
      readCsvDataset(fixture('labels-text.csv'), { labelColumn: 'diagnosis', labelMap: { M: 0 } }),
    );
    expect(m.code).toBe('DATA_LABEL_RANGE');
    expect(m.message).toBe(
      'test/fixtures/csv/labels-text.csv line 3, field "diagnosis": label "B" is not one of M',
    );
  });

  it('DATA_RAGGED: names the line and expected/actual field counts', () => {
    const e = thrown(() => readCsvDataset(fixture('ragged.csv'), { labelColumn: 'label' }));
    expect(e.code).toBe('DATA_RAGGED');
    expect(e.message).toBe(
      'test/fixtures/csv/ragged.csv line 3, field "label": row has 2 fields, the header has 3',
    );
    expect(e.details).toMatchObject({ line: 3, expected: 3, actual: 2 });
  });

  it('DATA_SHAPE: a header without rows', () => {
    const e = thrown(() => readCsvDataset(fixture('header-only.csv'), { labelColumn: 'label' }));
    expect(e.code).toBe('DATA_SHAPE');
    expect(e.message).toBe('test/fixtures/csv/header-only.csv line 2: no data rows after the header');
  });

  it('DATA_FILE_MISSING: names the path', () => {
    const e = thrown(() => readCsvDataset(fixture('absent.csv'), { labelColumn: 'label' }));
    expect(e.code).toBe('DATA_FILE_MISSING');
    expect(e.message).toBe('test/fixtures/csv/absent.csv: no such file');
  });

  it('DATA_FORMAT: duplicate header names', () => {
    const e = thrown(() => readCsvTable(fixture('dup-header.csv')));
    expect(e.code).toBe('DATA_FORMAT');
    expect(e.message).toBe(
      'test/fixtures/csv/dup-header.csv line 1, field "age": header name appears twice (columns 1 and 3)',
    );
  });
});

describe('readCsvColumns', () => {
  it('returns verbatim string columns in row order', () => {
    const c = readCsvColumns(fixture('sites.csv'));
    expect(Object.keys(c)).toEqual(['hospital', 'age', 'label']);
    expect(c['hospital']).toEqual(['north', 'south', 'north', 'east, annex', 'south']);
    expect(c['age']).toEqual(['34', '51', '29', '60', '44']);
    expect(c['constructor']).toBeUndefined();
  });
});
