export {
  type DataConfig,
  dataPaths,
  type ExperimentFile,
  experimentSchema,
  type RunConfig,
  runSchema,
} from './experiment-schema.ts';
export {
  deepMerge,
  type Experiment,
  loadExperiment,
  type ResolveExperimentOptions,
  resolveExperiment,
} from './load-experiment.ts';
export { readRoundMetrics, resultsTable } from './results-table.ts';
export { type ExperimentOutput, runExperiment, summaryTable } from './run-experiment.ts';
export {
  type RoundMetrics,
  type RunSummary,
  runSimulation,
  type SimulationHooks,
  sampleSites,
} from './run-simulation.ts';
export { type PlotSeries, renderLinePlot } from './svg-plot.ts';
export {
  type Contribution,
  float32Channel,
  heChannel,
  quantizedChannel,
  type UpdateChannel,
} from './update-channel.ts';
