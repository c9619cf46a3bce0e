export {
  type CheckDataOptions,
  checkDataFiles,
  type DataCheckReport,
  type DataFileKind,
  type DataFileReport,
  formatDataFileReport,
} from './check-data-files.ts';
export { readCsvColumns } from './csv-columns.ts';
export { type CsvDataset, type CsvDatasetOptions, readCsvDataset } from './csv-dataset.ts';
export { type CsvRecord, type CsvTable, parseCsvRecords, readCsvTable } from './csv-parse.ts';
export { DATA_ERROR_CODES, DataError, type DataErrorCode, type DataErrorLocation } from './data-error.ts';
export { encodeIdx, type IdxArray, MAX_IDX_BYTES, parseIdx, readIdx } from './idx.ts';
export { type IdxDatasetOptions, loadIdxDataset } from './idx-dataset.ts';
export { loadMnist, type MnistOptions, type MnistPaths, mnistPaths } from './mnist.ts';
export { encodeNpy, type NpyArray, type NpyDtype, parseNpy, readNpy } from './npy.ts';
export { loadNpyDataset, type NpyDatasetOptions } from './npy-dataset.ts';
export {
  type IdxPair,
  readMnistIdx,
  type SitePartition,
  type SplitFolder,
  type SplitSitesOptions,
  type SplitSitesReport,
  splitSites,
} from './split-sites.ts';
export { applyStandardizer, fitStandardizer, type Standardizer } from './standardizer.ts';
export { subset } from './subset.ts';
export { type TrainTestSplit, trainTestSplit } from './train-test-split.ts';
export { loadWdbc, wdbcPath } from './wdbc.ts';
export {
  DATA_FILE_MODE,
  type DataFileOutput,
  idxFileBytes,
  type WriteDataOptions,
  writeDataFiles,
  writeIdx,
  writeNpy,
} from './write-data-file.ts';
