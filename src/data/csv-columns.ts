import { readCsvTable } from './csv-parse.ts';

/**
 * Reads a CSV file with a header row as string columns keyed by header name: `columns[name][r]`
 * is the verbatim (unquoted, untrimmed) field of data row r. Row order and blank-line handling
 * match {@link readCsvDataset}, so row r here is row r of the data set read from the same file
 * (e.g. a hospital column for {@link partitionByColumn}). The object has no prototype, so only
 * header names are keys; an unknown name gives `undefined`. Errors as {@link readCsvTable}.
 */
export function readCsvColumns(path: string): Record<string, string[]> {
  const { header, rows } = readCsvTable(path);
  const columns: Record<string, string[]> = Object.create(null);
  header.forEach((name, k) => {
    columns[name] = rows.map((row) => row.fields[k]!);
  });
  return columns;
}
