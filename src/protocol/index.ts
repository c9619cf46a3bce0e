export { type Aggregate, AggregateBuilder, sumUpdates } from './aggregate.ts';
export {
  AggregateMacCheck,
  dataSlotsOfBlock,
  holdsTagLimbs,
  macBlockSum,
  macTag,
  type RoundMac,
  UpdateTagger,
  writeTagLimbs,
} from './aggregate-mac.ts';
export {
  BlockVerifier,
  type BlockVerifierOptions,
  type KeyLookup,
  maxBlockFrameBytes,
  maxManifestFrameBytes,
  type PinnedUpdate,
  type VerifiedBlock,
  type VerifiedManifest,
} from './block-verifier.ts';
export {
  assertCodecOptions,
  type CodecBits,
  type CodecOptions,
  codecEncoding,
  DEFAULT_CODEC_OPTIONS,
  sameEncoding,
} from './codec-options.ts';
export {
  type Assignment,
  ATTEMPT_BYTES,
  CONTROL_MAX_BYTES,
  type ControlBodies,
  type ControlType,
  controlDomain,
  controlTypeOf,
  type OpenControlOptions,
  type OpenedControl,
  openControl,
  readControl,
  sealControl,
  type TreeLink,
  type UnverifiedControl,
} from './control.ts';
export { runSteps, runStepsYielding, STEP_SLICE_MS, type Steps } from './cooperative-steps.ts';
export {
  CKKS_OPERATIONS,
  type CkksOperation,
  type CryptoTimingObserver,
  reportCkks,
  SIGNATURE_KINDS,
  type SignatureKind,
  signatureTimer,
} from './crypto-observer.ts';
export {
  type DecodedAggregate,
  decodeAggregate,
  decodeAggregateYielding,
  decodeUpdate,
} from './decode-aggregate.ts';
export { type AggregatorCredentials, encodeAggregate } from './encode-aggregate.ts';
export {
  type EncodedUpdate,
  type EncodeUpdateInput,
  encodeUpdate,
  encodeUpdateYielding,
  type SignedBlocks,
  type SiteCredentials,
  signBlocks,
} from './encode-update.ts';
export {
  assertEvaluation,
  decodeEvaluation,
  EVALUATION_FIELD_BITS,
  type Evaluation,
  emptyEvaluation,
  evaluationFieldCount,
  evaluationLaneCount,
  evaluationLevels,
  LOSS_FIXED_POINT,
  MAX_CONFUSION_CLASSES,
  sumEvaluations,
} from './evaluation-lanes.ts';
export { carryIntegers, digitsPerField, splitIntegers } from './integer-lanes.ts';
export type {
  AdminActionBody,
  AggregateInfo,
  BatchedVote,
  CulpritRecord,
  DecisionBody,
  EpochSiteBody,
  EvaluationBody,
  ExclusionRecord,
  LogRecordBody,
  LogRecordKind,
  PartialRecordBody,
  SnapshotRecordBody,
  ThresholdEpochBody,
  VoteBatchBody,
  VoteRecordBody,
} from './log-record-bodies.ts';
export {
  type Contributor,
  decodeBlockBody,
  decodeManifestBody,
  type Encoding,
  encodeBlockBody,
  encodeManifestBody,
  type ParameterBlock,
  PROTO_PATH,
  protoTypes,
  type UpdateHeader,
  type UpdateManifest,
} from './messages.ts';
export {
  ParallelBlockVerifier,
  type ParallelBlockVerifierOptions,
  type SignerKey,
  VerifyWorkerError,
} from './parallel-verifier.ts';
export { payloadPositionLabel } from './payload-position.ts';
export { RejectionCounters } from './rejection-counters.ts';
export { medianRmsOf, RMS_BUCKETS, rmsLevels } from './rms-lanes.ts';
export { assertRoundContext, type RoundContext } from './round-context.ts';
export { RoundTree, type RoundTreeSource } from './round-tree.ts';
export {
  decodeStatistics,
  decodeStatisticsParams,
  encodeStatisticsParams,
  type FeatureTotals,
  featureTotals,
  STATISTICS_FIELD_BITS,
  STATISTICS_FRACTION_BITS,
  STATISTICS_MAX_ABS,
  standardizerFromTotals,
  statisticsFieldCount,
  statisticsLaneCount,
  statisticsLevels,
  sumFeatureTotals,
} from './statistics-lanes.ts';
export { UpdateInbox } from './update-inbox.ts';
export { encodedLaneCount, type LayoutEncoding, type UpdateLayout, updateLayout } from './update-layout.ts';
export {
  blockLeaf,
  contributorsDigest,
  PARTIAL_SIGNATURE_DOMAIN,
  UPDATE_SIGNATURE_DOMAIN,
  updateSignatureDomain,
  updateStatement,
} from './update-statement.ts';
export { assembleUpdate, type VerifiedUpdate } from './verified-update.ts';
export {
  FRAME_HEADER_BYTES,
  FRAME_KIND,
  type FrameKind,
  frame,
  unframe,
  WIRE_VERSION,
} from './wire-frame.ts';
