import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    // Stopping an embedded PostgreSQL in an afterAll took over 20 s on a loaded 2-core machine.
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default'],
  },
});
