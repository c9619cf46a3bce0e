// The site side of the round bench's plaintext FedAvg arm, one process per site (as `cohort agent`
// runs in the he arm): on RoundOpen it trains from its current model exactly as the agent does
// (same engine, data shard, settings and shuffle seed), sends (w_local − w)·n_k as float32 to its
// aggregator, and on PREPARE takes the published model and acks. No CKKS, signatures, votes or log.
// Usage: node bench/round-plain-site.ts <config.yaml> <site> <aggregator>
import { counterRandom } from '../federation/index.ts';
import { createCpuEngine } from '../gpu/cpu/cpu-engine.ts';
import { loadConfig } from '../src/config/index.ts';
import { federationGenesis } from '../src/services/agent/genesis.ts';
import { loadSiteShard } from '../src/services/agent/site-data.ts';
import { openMember } from '../src/services/index.ts';
import { packFloats, unpackFloats } from './round-plain-wire.ts';

const [configPath, site, aggregator] = process.argv.slice(2) as [string, string, string];
const config = loadConfig(configPath);
const learning = config.learning;
const genesis = federationGenesis(config);
const nParams = genesis.parameters.length;
const ctx = await openMember(config, site);
const S = ctx.subjects;
const shard = loadSiteShard(config, site);
const engine = createCpuEngine();
let w = genesis.parameters.slice() as Float32Array;
const subs = [
  ctx.transport.subscribe(S.roundOpen, async (msg) => {
    const round = new DataView(msg.data.buffer, msg.data.byteOffset).getUint32(0, true);
    const trained = await engine.train(genesis.spec, w, shard.data, {
      learningRate: learning.learningRate,
      momentum: 0,
      batchSize: learning.batchSize,
      epochs: learning.epochs,
      proximalMu: 0,
      shuffleSeed: counterRandom(learning.initSeed >>> 0, round >>> 0, shard.index),
    });
    const u = new Float32Array(nParams);
    for (let i = 0; i < nParams; i++) u[i] = (trained.parameters[i]! - w[i]!) * shard.data.count;
    await ctx.transport.request(S.update(aggregator, site), packFloats(round, shard.data.count, u));
  }),
  ctx.transport.subscribe(S.prepare, async (msg) => {
    const m = unpackFloats(msg.data);
    w = m.values;
    await ctx.transport.request(S.vote(site), packFloats(m.round, 0, new Float32Array(0)));
  }),
];
await Promise.all(subs.map((s) => s.ready()));
await ctx.transport.flush();
process.stdout.write(`${JSON.stringify({ event: 'ready', site })}\n`);
await new Promise<void>((resolve) => {
  process.once('SIGTERM', resolve);
  process.once('SIGINT', resolve);
});
await Promise.allSettled(subs.map((s) => s.unsubscribe()));
await engine.dispose();
await ctx.close();
