import { defineConfig } from 'vitest/config';

// Default run: fast unit and integration tests. Slow suites live in *.slow.test.ts (npm run test:slow).
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/**/*.slow.test.ts', 'test/**/*.gpu.test.ts', 'node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
