/**
 * Worker-thread side of {@link TrainPool}: a CPU engine over the shared rows; trains the site it
 * is handed, or evaluates a range of the test rows, one message at a time.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createCpuEngine } from '../../gpu/cpu/index.ts';
import type { Dataset } from '../../gpu/index.ts';
import { subset } from '../data/index.ts';
import type { PoolRequest, PoolResponse, TrainPoolData } from './train-pool.ts';

const port = parentPort;
if (!port) throw new Error('train-worker.ts runs only as a worker thread');

const data = workerData as TrainPoolData;
const engine = createCpuEngine();
const train: Dataset = data.train;
const test: Dataset = data.test;

port.on('message', async (req: PoolRequest) => {
  let answer: PoolResponse;
  try {
    if (req.kind === 'train') {
      const rows = subset(train, data.parts[req.site]!);
      const result = await engine.train(data.spec, req.global, rows, req.config);
      answer = { id: req.id, train: result };
    } else {
      const rows = subset(
        test,
        Array.from({ length: req.end - req.start }, (_, i) => req.start + i),
      );
      answer = { id: req.id, evaluate: await engine.evaluate(data.spec, req.global, rows) };
    }
  } catch (err) {
    answer = { id: req.id, error: (err as Error).message };
  }
  port.postMessage(answer);
});
