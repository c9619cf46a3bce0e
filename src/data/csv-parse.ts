import { DataError } from './data-error.ts';
import { readDataFile } from './read-file.ts';

/** One CSV record: its fields and the 1-based line it starts on. */
export interface CsvRecord {
  readonly line: number;
  readonly fields: string[];
}

/** A parsed CSV file: the header row and the data rows, blank lines skipped. */
export interface CsvTable {
  readonly file: string;
  readonly header: string[];
  /** The line the header row is on (1 unless blank lines precede it). */
  readonly headerLine: number;
  readonly rows: CsvRecord[];
}

/**
 * Parses CSV text (RFC 4180, leniently): fields separated by `,`; records end at CRLF, LF or a
 * lone CR; a field starting with `"` is quoted and may hold commas, line breaks and `""` (one
 * quote). A leading UTF-8 BOM is dropped, fully blank lines are skipped, and fields are kept
 * verbatim (no trimming). Line numbers are physical lines (a quoted line break counts).
 *
 * Throws `DATA_FORMAT` naming line and field for an unterminated quote, text after a closing quote,
 * or a quote inside an unquoted field.
 */
export function parseCsvRecords(text: string, file: string): CsvRecord[] {
  const n = text.length;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let line = 1;
  const records: CsvRecord[] = [];
  let header: string[] | undefined;
  const fieldName = (k: number): string => header?.[k] ?? `column ${k + 1}`;

  while (i < n) {
    const recordLine = line;
    const fields: string[] = [];
    let quotedAny = false;
    for (;;) {
      let value: string;
      if (text[i] === '"') {
        quotedAny = true;
        const fieldLine = line;
        i++;
        const parts: string[] = [];
        let start = i;
        for (;;) {
          if (i >= n) {
            throw DataError.at(
              'DATA_FORMAT',
              { file, line: fieldLine, field: fieldName(fields.length) },
              'quoted field is never closed (missing ")',
            );
          }
          const c = text[i];
          if (c === '"') {
            parts.push(text.slice(start, i));
            if (text[i + 1] === '"') {
              parts.push('"');
              i += 2;
              start = i;
              continue;
            }
            i++;
            break;
          }
          if (c === '\n' || (c === '\r' && text[i + 1] !== '\n')) line++;
          i++;
        }
        value = parts.join('');
        if (i < n && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') {
          throw DataError.at(
            'DATA_FORMAT',
            { file, line, field: fieldName(fields.length) },
            `unexpected ${JSON.stringify(text[i])} after the closing quote (expected , or end of line)`,
          );
        }
      } else {
        const start = i;
        while (i < n) {
          const c = text[i];
          if (c === ',' || c === '\n' || c === '\r') break;
          if (c === '"') {
            throw DataError.at(
              'DATA_FORMAT',
              { file, line, field: fieldName(fields.length) },
              'quote inside an unquoted field (quote the whole field and double inner quotes)',
            );
          }
          i++;
        }
        value = text.slice(start, i);
      }
      fields.push(value);
      if (i >= n) break;
      const c = text[i];
      if (c === ',') {
        i++;
        continue;
      }
      // End of record: CRLF, LF or lone CR.
      i += c === '\r' && text[i + 1] === '\n' ? 2 : 1;
      line++;
      break;
    }
    if (fields.length === 1 && fields[0] === '' && !quotedAny) continue;
    records.push({ line: recordLine, fields });
    header ??= fields;
  }
  return records;
}

/**
 * Reads a CSV file with a header row and checks its shape. Throws `DATA_FILE_MISSING`;
 * `DATA_FORMAT` for an empty file, an empty or duplicate header name, or bad quoting;
 * `DATA_RAGGED` for a row whose field count differs from the header's (line, expected and actual
 * counts named); `DATA_SHAPE` when there are no data rows.
 */
export function readCsvTable(path: string): CsvTable {
  const text = readDataFile(path).toString('utf8');
  const records = parseCsvRecords(text, path);
  const first = records[0];
  if (first === undefined) {
    throw DataError.at('DATA_FORMAT', { file: path, line: 1 }, 'file is empty; a header row is required');
  }
  const header = first.fields;
  const seen = new Map<string, number>();
  header.forEach((name, k) => {
    if (name.trim() === '') {
      throw DataError.at(
        'DATA_FORMAT',
        { file: path, line: first.line, field: `column ${k + 1}` },
        'header name is empty',
      );
    }
    const earlier = seen.get(name);
    if (earlier !== undefined) {
      throw DataError.at(
        'DATA_FORMAT',
        { file: path, line: first.line, field: name },
        `header name appears twice (columns ${earlier + 1} and ${k + 1})`,
      );
    }
    seen.set(name, k);
  });
  const rows = records.slice(1);
  for (const row of rows) {
    const actual = row.fields.length;
    if (actual !== header.length) {
      throw DataError.at(
        'DATA_RAGGED',
        { file: path, line: row.line, ...(actual < header.length ? { field: header[actual]! } : {}) },
        `row has ${actual} fields, the header has ${header.length}`,
        { details: { expected: header.length, actual } },
      );
    }
  }
  if (rows.length === 0) {
    throw DataError.at('DATA_SHAPE', { file: path, line: first.line + 1 }, 'no data rows after the header');
  }
  return { file: path, header, headerLine: first.line, rows };
}
