// docs/reference is generated from the code (npm run docs:reference): the CLI page from the
// commands, the error page from the catalogues. A page that differs from its source fails here;
// the catalogue parser reads every code with its TSDoc meaning.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { catalogues, referencePages } from '../../.ci/reference.ts';

const ROOT = resolve(import.meta.dirname, '../..');

describe('docs/reference', () => {
  it('every page is what the code renders', async () => {
    for (const [path, text] of Object.entries(await referencePages()))
      expect(readFileSync(join(ROOT, path), 'utf8'), `${path}: run npm run docs:reference`).toBe(text);
  });

  it('the CLI page has every command, the error page every catalogue', async () => {
    const pages = await referencePages();
    for (const c of [
      'cohort agent',
      'cohort keys signing generate',
      'cohort audit verify',
      'cohort versions rollback',
    ])
      expect(pages['docs/reference/cli.md']).toContain(`## \`${c}\``);
    for (const code of ['TRANSPORT_TIMEOUT', 'LOG_SEQUENCE_CONFLICT', 'BUNDLE_SEAL_INVALID', 'CRC_MISMATCH'])
      expect(pages['docs/reference/errors.md']).toMatch(new RegExp(`^\\| \`${code}\` +\\| \\S`, 'm'));
  });

  it('reads codes with one-line and multi-line meanings, and none from elsewhere', () => {
    const text = [
      'export const X_ERROR_CODES = [',
      '  /** One line. */',
      "  'ONE',",
      '  /**',
      '   * Two',
      '   * lines.',
      '   */',
      "  'TWO',",
      "  'BARE',",
      '] as const;',
      "const NOT_EXPORTED_CODES = ['NO'];",
      "export const Y_REASONS: readonly string[] = Object.freeze(['R']);",
    ].join('\n');
    expect(catalogues(text)).toEqual([
      {
        name: 'X_ERROR_CODES',
        codes: [
          { code: 'ONE', meaning: 'One line.' },
          { code: 'TWO', meaning: 'Two lines.' },
          { code: 'BARE', meaning: '' },
        ],
      },
      { name: 'Y_REASONS', codes: [{ code: 'R', meaning: '' }] },
    ]);
  });
});
