import { defineConfig } from 'vitest/config';

// The fault suite (npm run test:faults, docs/faults.md): real processes killed or stopped at protocol
// steps. One file at a time, so the cases do not compete for the cores and their timings stay far
// from every deadline; the outcome table is written to docs/faults.md once every case passed.
export default defineConfig({
  test: {
    include: ['test/faults/**/*.faults.test.ts'],
    exclude: ['node_modules/**'],
    globalSetup: ['test/faults/fault-table.ts'],
    fileParallelism: false,
    // Generous: members start slowly on loaded cores; each case bounds its own waits.
    testTimeout: 300_000,
    hookTimeout: 300_000,
    pool: 'forks',
  },
});
