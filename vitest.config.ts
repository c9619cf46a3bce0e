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
  },
});
