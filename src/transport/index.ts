export { type ChunkFrame, crcHex, FRAME_HEADERS, parseChunkFrame, splitChunks } from './chunk-frame.ts';
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
export {
  connectTransport,
  NatsTransport,
  type NatsTransportOptions,
  type NatsTransportStats,
} from './nats-transport.ts';
export {
  type FederationAuthorizationSpec,
  federationAuthorization,
  federationUsers,
  type MemberCredential,
  type NatsPermissionSet,
  type NatsUser,
  renderAuthorization,
} from './permissions.ts';
export { Reassembler, type ReassemblerOptions } from './reassembler.ts';
export { assertSubject } from './subject-check.ts';
export {
  assertSubjectToken,
  type FederationSubjects,
  federationSubjects,
  OBJECT_STREAM_PREFIX,
  objectStreamName,
  readOnlyStreamSubjects,
} from './subjects.ts';
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
