export { canonicalJson } from './canonical-json.ts';
export {
  type CheckDataOptions,
  checkDataFiles,
  type DataCheckReport,
  type DataFileKind,
  type DataFileReport,
  formatDataFileReport,
} from './check-data-files.ts';
export { classHistogram } from './class-histogram.ts';
export { readCsvColumns } from './csv-columns.ts';
export { type CsvDataset, type CsvDatasetOptions, csvTableDataset, readCsvDataset } from './csv-dataset.ts';
export { type CsvRecord, type CsvTable, parseCsvRecords, readCsvTable } from './csv-parse.ts';
export {
  contractExampleShape,
  contractFeatureCount,
  contractLabelMap,
  describeContract,
} from './data-contract.ts';
export { DATA_CONTRACT_DOMAIN, dataContractDigest } from './data-contract-digest.ts';
export { DATA_ERROR_CODES, DataError, type DataErrorCode, type DataErrorLocation } from './data-error.ts';
export { encodeIdx, type IdxArray, MAX_IDX_BYTES, parseIdx, readIdx } from './idx.ts';
export { type IdxDatasetOptions, idxPairDataset, loadIdxDataset } from './idx-dataset.ts';
export { loadSiteData, type SiteData } from './load-site-data.ts';
export { loadMnist, type MnistOptions, type MnistPaths, mnistPaths } from './mnist.ts';
export { encodeNpy, type NpyArray, type NpyDtype, parseNpy, readNpy } from './npy.ts';
export { loadNpyDataset, type NpyDatasetOptions, npyPairDataset } from './npy-dataset.ts';
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
