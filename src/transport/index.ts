export {
  type ChunkFrame,
  type ChunkHeader,
  crcHex,
  FRAME_HEADERS,
  MIN_CHUNK_BYTES,
  parseChunkFrame,
  splitChunks,
} from './chunk-frame.ts';
export {
  assertServerUrls,
  type NatsAuthFiles,
  type NatsAuthOptions,
  type NatsTlsFiles,
  natsAuthOptions,
} from './connect-options.ts';
export { connectTransport, type NatsTransportOptions } from './connect-transport.ts';
export {
  TRANSPORT_DROP_REASONS,
  type TransportDropCounts,
  type TransportDropReason,
} from './drop-reason.ts';
export {
  findNatsServer,
  freePort,
  type NatsClusterHandle,
  type NatsClusterOptions,
  type NatsServerHandle,
  type NatsServerOptions,
  startNatsCluster,
  startNatsServer,
} from './nats-process.ts';
export { NatsTransport, type NatsTransportStats } from './nats-transport.ts';
export {
  assertUserNkey,
  DEFAULT_RESPONSE_EXPIRES_MS,
  type FederationAuthorizationSpec,
  federationAuthorization,
  federationUsers,
  type MemberCredential,
  type NatsPermissionSet,
  type NatsResponsePermission,
  type NatsUser,
  renderAuthorization,
} from './permissions.ts';
export { DEFAULT_MAX_SENDERS, type RateLimitOptions } from './rate-limiter.ts';
export {
  PART_OVERHEAD_BYTES,
  Reassembler,
  type ReassemblerOptions,
  type ReassemblyDropReason,
  type ReassemblyResult,
} from './reassembler.ts';
export { ANY_INBOX, federationReplyPolicy, type ReplyPolicy, replyAllowed } from './reply-policy.ts';
export {
  type FederationLimitsSpec,
  federationServerLimits,
  type NatsServerConfigSpec,
  type NatsServerLimits,
  type NatsServerTlsFiles,
  renderServerConfig,
  renderServerLimits,
  renderTlsBlock,
  SERVER_LIMIT_DEFAULTS,
} from './server-config.ts';
export { assertSubject } from './subject-check.ts';
export {
  assertObjectToken,
  assertSubjectToken,
  type FederationSubjects,
  federationSubjects,
  OBJECT_STREAM_PREFIX,
  objectStreamName,
  readOnlyStreamSubjects,
} from './subjects.ts';
export {
  type CertificateAuthority,
  type CertificateRequest,
  createCertificateAuthority,
  generateTlsKeyPair,
  issueCertificate,
  type TlsKeyPair,
} from './tls-certificate.ts';
export type {
  InboundMessage,
  MessageHandler,
  MessageHeaders,
  RequestOptions,
  SubscribeOptions,
  SubscriptionStats,
  Transport,
  TransportSubscription,
} from './transport.ts';
export { TRANSPORT_ERROR_CODES, TransportError, type TransportErrorCode } from './transport-error.ts';
export { TRANSPORT_DEFAULTS } from './transport-limits.ts';
