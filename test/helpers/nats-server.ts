// Test harness for a private nats-server (and a three-node cluster); the implementation lives in
// src/transport/nats-process.ts so a demo can use it too.
export {
  findNatsServer,
  freePort,
  type NatsClusterHandle,
  type NatsClusterOptions,
  type NatsServerHandle,
  type NatsServerOptions,
  startNatsCluster,
  startNatsServer,
} from '../../src/transport/index.ts';
