// Loaded into each soak member (`node --expose-gc --import bench/soak-probe.ts bin/cohort.js …`):
// on SIGUSR2 it runs a full garbage collection, then appends one JSON line with the process's
// memory use to $COHORT_SOAK_PROBE_FILE. What is live after a full collection is what the service
// holds; RSS also holds garbage V8 has not collected yet and heap it keeps for later, which is
// why RSS alone cannot tell a leak from a heap V8 is still sizing.
import { appendFileSync } from 'node:fs';

const file = process.env.COHORT_SOAK_PROBE_FILE;
const gc = (globalThis as { gc?: () => void }).gc;
let n = 0;
// Installed whatever the settings: SIGUSR2's default action would end the process.
process.on('SIGUSR2', () => {
  if (file === undefined || file === '' || typeof gc !== 'function') return;
  gc();
  const m = process.memoryUsage();
  appendFileSync(
    file,
    `${JSON.stringify({ n: ++n, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers, rss: m.rss })}\n`,
  );
});
