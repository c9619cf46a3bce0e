import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type DataContract,
  type DataContractInput,
  dataContractSchema,
  parseSiteConfig,
  type SiteConfig,
  type SiteConfigInput,
} from '../../src/config/index.ts';
import { classHistogram, DataError, loadSiteData, writeIdx, writeNpy } from '../../src/data/index.ts';
import { ConfigError } from '../../src/errors/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-site-data-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function contract(input: DataContractInput): DataContract {
  return dataContractSchema.parse(input);
}

/** A site configuration whose data paths are relative to the test folder. */
function site(input: SiteConfigInput): SiteConfig {
  const file = join(dir, 'site.yaml');
  return parseSiteConfig(input, { file });
}

const tabular = contract({
  kind: 'tabular',
  features: [
    { name: 'id', type: 'integer' },
    { name: 'radius_mean', type: 'number' },
  ],
  label: { name: 'diagnosis', classes: ['B', 'M'] },
});

const image = contract({
  kind: 'image',
  image: { channels: 1, height: 2, width: 3 },
  label: { classes: [0, 1, 2] },
  preprocessing: { scale: 1 / 255 },
});

function csv(name: string, text: string): string {
  writeFileSync(join(dir, name), text);
  return name;
}

/** `rows` CSV rows `id,radius_mean,diagnosis` with ids 0…rows−1 and alternating classes. */
function goodCsv(name: string, rows: number): string {
  const lines = ['id,radius_mean,diagnosis'];
  for (let i = 0; i < rows; i++) lines.push(`${i},${(i * 0.5).toFixed(1)},${i % 3 === 0 ? 'M' : 'B'}`);
  return csv(name, `${lines.join('\n')}\n`);
}

function expectDataError(fn: () => unknown, code: string, message: string | RegExp): DataError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(DataError);
  const err = caught as DataError;
  expect(err.code).toBe(code);
  if (typeof message === 'string') expect(err.message).toBe(message);
  else expect(err.message).toMatch(message);
  return err;
}

describe('loadSiteData: CSV against a tabular contract', () => {
  it('reads features in contract order and labels as class indices', () => {
    csv('swapped.csv', 'diagnosis,radius_mean,extra,id\nM,1.5,x,7\nB,2.25,y,8\n');
    const data = loadSiteData(tabular, site({ data: { csv: { path: 'swapped.csv' } } }));
    expect(data.validation).toBeNull();
    expect(data.files).toEqual([join(dir, 'swapped.csv')]);
    expect(data.train.count).toBe(2);
    expect(data.train.featureCount).toBe(2);
    expect(data.train.classCount).toBe(2);
    expect([...data.train.features]).toEqual([7, 1.5, 8, 2.25]);
    expect([...data.train.labels]).toEqual([1, 0]);
  });

  it("maps contract features to this file's own column names, and its own label column", () => {
    csv('mapped.csv', 'Radius (mean),Patient,Dx\n3.5,1,B\n4.5,2,M\n');
    const data = loadSiteData(
      tabular,
      site({
        data: {
          csv: { path: 'mapped.csv', columns: { radius_mean: 'Radius (mean)', id: 'Patient' }, label: 'Dx' },
        },
      }),
    );
    expect([...data.train.features]).toEqual([1, 3.5, 2, 4.5]);
    expect([...data.train.labels]).toEqual([0, 1]);
  });

  it('matches integer classes by their decimal text', () => {
    const c = contract({
      kind: 'tabular',
      features: [{ name: 'x' }],
      label: { name: 'y', classes: [10, 20, 'other'] },
    });
    csv('int-classes.csv', 'x,y\n1,20\n2, 10 \n3,other\n');
    const data = loadSiteData(c, site({ data: { csv: { path: 'int-classes.csv' } } }));
    expect([...data.train.labels]).toEqual([1, 0, 2]);
  });

  it('refuses a missing column, naming the contract feature and the header', () => {
    csv('no-radius.csv', 'id,diagnosis\n1,B\n');
    expectDataError(
      () => loadSiteData(tabular, site({ data: { csv: { path: 'no-radius.csv' } } })),
      'DATA_FORMAT',
      `${join(dir, 'no-radius.csv')} line 1: column "radius_mean" (contract feature 2) is missing; header has: id, diagnosis`,
    );
    expectDataError(
      () =>
        loadSiteData(
          tabular,
          site({ data: { csv: { path: 'no-radius.csv', columns: { radius_mean: 'Radius' } } } }),
        ),
      'DATA_FORMAT',
      /line 1: column "Radius" \(contract feature 2, radius_mean\) is missing; header has: id, diagnosis$/,
    );
    csv('no-label.csv', 'id,radius_mean\n1,2\n');
    expectDataError(
      () => loadSiteData(tabular, site({ data: { csv: { path: 'no-label.csv' } } })),
      'DATA_FORMAT',
      /no-label\.csv line 1: label column "diagnosis" is missing; header has: id, radius_mean$/,
    );
  });

  it('refuses a label outside the classes, naming file, line and field', () => {
    const lines = ['id,radius_mean,diagnosis'];
    for (let i = 0; i < 15; i++) lines.push(`${i},1,B`);
    lines.push('15,1,X');
    csv('bad-label.csv', `${lines.join('\n')}\n`);
    expectDataError(
      () => loadSiteData(tabular, site({ data: { csv: { path: 'bad-label.csv' } } })),
      'DATA_LABEL_RANGE',
      `${join(dir, 'bad-label.csv')} line 17, field "diagnosis": label "X" is not one of B, M`,
    );
  });

  it('refuses text in a number column, a non-integer in an integer feature, and non-finite values', () => {
    csv('text.csv', 'id,radius_mean,diagnosis\n1,abc,B\n');
    expectDataError(
      () => loadSiteData(tabular, site({ data: { csv: { path: 'text.csv' } } })),
      'DATA_FORMAT',
      `${join(dir, 'text.csv')} line 2, field "radius_mean": "abc" is not a number`,
    );
    csv('fraction.csv', 'id,radius_mean,diagnosis\n1,1,B\n2.5,1,M\n');
    expectDataError(
      () => loadSiteData(tabular, site({ data: { csv: { path: 'fraction.csv' } } })),
      'DATA_FORMAT',
      `${join(dir, 'fraction.csv')} line 3, field "id": "2.5" is not an integer`,
    );
    csv('nan.csv', 'id,radius_mean,diagnosis\n1,NaN,B\n');
    expectDataError(
      () => loadSiteData(tabular, site({ data: { csv: { path: 'nan.csv' } } })),
      'DATA_NON_FINITE',
      /nan\.csv line 2, field "radius_mean": "NaN" is not finite$/,
    );
    csv('empty-value.csv', 'id,radius_mean,diagnosis\n1,,B\n');
    expectDataError(
      () => loadSiteData(tabular, site({ data: { csv: { path: 'empty-value.csv' } } })),
      'DATA_NON_FINITE',
      /empty-value\.csv line 2, field "radius_mean": value is empty$/,
    );
  });

  it('refuses a value the scale takes beyond float32 range', () => {
    const scaled = contract({
      kind: 'tabular',
      features: [{ name: 'x' }],
      label: { name: 'y', classes: [0, 1] },
      preprocessing: { scale: 1e30 },
    });
    csv('huge.csv', 'x,y\n1,0\n1e10,1\n');
    expectDataError(
      () => loadSiteData(scaled, site({ data: { csv: { path: 'huge.csv' } } })),
      'DATA_NON_FINITE',
      /huge\.csv line 3, field "x": 10000000000 times the contract's scale 1e\+30 is beyond float32 range$/,
    );
  });

  it('refuses a site configuration that does not fit the contract before reading', () => {
    expect(() => loadSiteData(image, site({ data: { csv: { path: 'missing.csv' } } }))).toThrow(ConfigError);
    expect(() =>
      loadSiteData(tabular, site({ data: { csv: { path: 'missing.csv', columns: { radius_man: 'r' } } } })),
    ).toThrow(
      /data\.csv\.columns\.radius_man: not a feature of the data contract \(did you mean 'radius_mean'\?\)/,
    );
  });

  it('names a file that does not exist', () => {
    expectDataError(
      () => loadSiteData(tabular, site({ data: { csv: { path: 'nowhere.csv' } } })),
      'DATA_FILE_MISSING',
      `${join(dir, 'nowhere.csv')}: no such file`,
    );
  });
});

describe('loadSiteData: the validation split', () => {
  it('is deterministic, disjoint, covers every row and keeps the classes balanced', () => {
    goodCsv('split.csv', 50);
    const config = site({ data: { csv: { path: 'split.csv' } }, validation: { fraction: 0.2, seed: 7 } });
    const a = loadSiteData(tabular, config);
    const b = loadSiteData(tabular, config);
    expect(a.validation).not.toBeNull();
    expect(a.train.count).toBe(40);
    expect(a.validation!.count).toBe(10);
    expect([...a.train.features]).toEqual([...b.train.features]);
    expect([...a.validation!.features]).toEqual([...b.validation!.features]);
    const ids = (d: { features: Float32Array; count: number }) =>
      Array.from({ length: d.count }, (_, r) => d.features[r * 2]!);
    const train = ids(a.train);
    const validation = ids(a.validation!);
    expect(train.filter((id) => validation.includes(id))).toEqual([]);
    expect([...train, ...validation].sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    // 17 of the 50 rows are M: the validation side gets its share (3 or 4).
    const m = classHistogram(a.validation!)[1]!;
    expect(m === 3 || m === 4).toBe(true);
    const other = loadSiteData(
      tabular,
      site({ data: { csv: { path: 'split.csv' } }, validation: { fraction: 0.2, seed: 8 } }),
    );
    expect(ids(other.validation!)).not.toEqual(validation);
  });

  it('works for sites of different sizes', () => {
    goodCsv('small.csv', 5);
    goodCsv('large.csv', 300);
    const small = loadSiteData(
      tabular,
      site({ data: { csv: { path: 'small.csv' } }, validation: { fraction: 0.2 } }),
    );
    const large = loadSiteData(
      tabular,
      site({ data: { csv: { path: 'large.csv' } }, validation: { fraction: 0.2 } }),
    );
    expect([small.train.count, small.validation!.count]).toEqual([4, 1]);
    expect([large.train.count, large.validation!.count]).toEqual([240, 60]);
  });

  it('refuses too few rows for the split', () => {
    goodCsv('one.csv', 1);
    expectDataError(
      () =>
        loadSiteData(tabular, site({ data: { csv: { path: 'one.csv' } }, validation: { fraction: 0.5 } })),
      'DATA_SHAPE',
      /one\.csv, field "rows": 1 row, too few for a validation split/,
    );
  });
});

describe('loadSiteData: IDX and .npy files', () => {
  const pixels = (n: number, size: number) => Uint8Array.from({ length: n * size }, (_, i) => (i * 37) % 256);

  it('reads an IDX pair (gzip or not), scaling bytes as the contract says', () => {
    writeIdx(join(dir, 'images.idx3-ubyte.gz'), [4, 2, 3], pixels(4, 6));
    writeIdx(join(dir, 'labels.idx1-ubyte'), [4], Uint8Array.from([0, 2, 1, 2]));
    const data = loadSiteData(
      image,
      site({ data: { idx: { images: 'images.idx3-ubyte.gz', labels: 'labels.idx1-ubyte' } } }),
    );
    expect(data.files).toEqual([join(dir, 'images.idx3-ubyte.gz'), join(dir, 'labels.idx1-ubyte')]);
    expect(data.train.count).toBe(4);
    expect(data.train.featureCount).toBe(6);
    expect(data.train.classCount).toBe(3);
    expect([...data.train.labels]).toEqual([0, 2, 1, 2]);
    expect([...data.train.features]).toEqual([...pixels(4, 6)].map((b) => Math.fround(b / 255)));
  });

  it('refuses images of another size, naming both sizes', () => {
    writeIdx(join(dir, 'big.idx3-ubyte'), [2, 3, 3], pixels(2, 9));
    writeIdx(join(dir, 'big-labels.idx1-ubyte'), [2], Uint8Array.from([0, 1]));
    expectDataError(
      () =>
        loadSiteData(
          image,
          site({ data: { idx: { images: 'big.idx3-ubyte', labels: 'big-labels.idx1-ubyte' } } }),
        ),
      'DATA_SHAPE',
      `${join(dir, 'big.idx3-ubyte')}, field "dimensions": images are 3×3, the contract says 2×3`,
    );
  });

  it('refuses an IDX label that is not a class index', () => {
    writeIdx(join(dir, 'ok.idx3-ubyte'), [2, 2, 3], pixels(2, 6));
    writeIdx(join(dir, 'bad-labels.idx1-ubyte'), [2], Uint8Array.from([0, 3]));
    expectDataError(
      () =>
        loadSiteData(
          image,
          site({ data: { idx: { images: 'ok.idx3-ubyte', labels: 'bad-labels.idx1-ubyte' } } }),
        ),
      'DATA_LABEL_RANGE',
      `${join(dir, 'bad-labels.idx1-ubyte')}, field "label[1]": label 3 is outside [0, 3)`,
    );
  });

  it('reads .npy features as [n, h, w] or flat [n, h·w], and checks integer features', () => {
    writeNpy(
      join(dir, 'x.npy'),
      [3, 2, 3],
      '<f4',
      Array.from({ length: 18 }, (_, i) => i),
    );
    writeNpy(
      join(dir, 'flat.npy'),
      [3, 6],
      '<f4',
      Array.from({ length: 18 }, (_, i) => i),
    );
    writeNpy(join(dir, 'y.npy'), [3], '|u1', [2, 1, 0]);
    for (const features of ['x.npy', 'flat.npy']) {
      const data = loadSiteData(image, site({ data: { npy: { features, labels: 'y.npy' } } }));
      expect(data.train.featureCount).toBe(6);
      expect(data.train.features[17]).toBe(Math.fround(17 * Math.fround(1 / 255)));
      expect([...data.train.labels]).toEqual([2, 1, 0]);
    }
    writeNpy(join(dir, 'wrong.npy'), [3, 7], '<f4', new Array(21).fill(0));
    expectDataError(
      () => loadSiteData(image, site({ data: { npy: { features: 'wrong.npy', labels: 'y.npy' } } })),
      'DATA_SHAPE',
      /wrong\.npy, field "shape": images are 7, the contract says 2×3$/,
    );
    writeNpy(join(dir, 'tab.npy'), [2, 2], '<f8', [1, 0.5, 2.5, 1]);
    writeNpy(join(dir, 'tab-y.npy'), [2], '<i4', [1, 0]);
    expectDataError(
      () => loadSiteData(tabular, site({ data: { npy: { features: 'tab.npy', labels: 'tab-y.npy' } } })),
      'DATA_FORMAT',
      /tab\.npy, field "row 1, feature id": 2\.5 is not an integer/,
    );
    writeNpy(join(dir, 'tab-ok.npy'), [2, 2], '<f8', [1, 0.5, 2, 1]);
    const ok = loadSiteData(
      tabular,
      site({ data: { npy: { features: 'tab-ok.npy', labels: 'tab-y.npy' } } }),
    );
    expect([...ok.train.features]).toEqual([1, 0.5, 2, 1]);
    expectDataError(
      () => loadSiteData(tabular, site({ data: { npy: { features: 'x.npy', labels: 'y.npy' } } })),
      'DATA_SHAPE',
      /x\.npy, field "shape": rows hold 2×3 values, the contract has 2 features$/,
    );
  });
});
