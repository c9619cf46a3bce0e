import { fileURLToPath } from 'node:url';
import { type CsvDataset, readCsvDataset } from './csv-dataset.ts';

/** Absolute path of the Breast Cancer Wisconsin (Diagnostic) CSV shipped in `data/wdbc/`. */
export function wdbcPath(): string {
  return fileURLToPath(new URL('../../data/wdbc/wdbc.csv', import.meta.url));
}

/**
 * The WDBC data set (`data/wdbc/wdbc.csv`, see its README): 569 rows, 30 real-valued features,
 * label column `diagnosis` with 2 classes (0 = malignant, 212 rows; 1 = benign, 357 rows), as
 * `.dataset`. Features are raw (not standardized); see {@link fitStandardizer}.
 */
export function loadWdbc(): CsvDataset {
  return readCsvDataset(wdbcPath(), { labelColumn: 'diagnosis', classCount: 2 });
}
