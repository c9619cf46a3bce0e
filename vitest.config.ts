import { defineConfig } from 'vitest/config';

// Default run: every unit and integration test, the WebGPU ones included (lavapipe in CI).
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The fault suite runs on its own (npm run test:faults, vitest.faults.config.ts).
    exclude: ['test/**/*.faults.test.ts', 'node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at a time. Vitest's default on a 2-core CI machine is one (cores − 1), and the
    // federation tests mostly wait on the network and timers: run alone they used half the CPU and
    // the suite's wall time neared CI's 30 minutes.
    maxWorkers: 2,
  },
});
