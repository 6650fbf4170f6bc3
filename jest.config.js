/** Jest runs the TypeScript sources through SWC as native ES modules (see ARCHITECTURE.md). */
export const base = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: {
          parser: { syntax: 'typescript', decorators: true },
          transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
          target: 'es2023',
        },
        module: { type: 'es6' },
      },
    ],
  },
  setupFiles: ['<rootDir>/test/setup-env.ts'],
  testTimeout: 30000,
};

/**
 * `npm test`: every test file but the long ones (`*.long.test.ts`, jest.long.config.js), each with a
 * database of its own, slowest first, on three workers for two cores: much of a test's time is spent
 * waiting (for a deadline, a retry, a child process), and a third file fills it (measured here: jest
 * 241 s on two workers, 210 s on three, 203 s on four, the same CPU time). A worker that grows past
 * the memory limit is replaced: one process running every file grows past 10 GB, and its
 * collections slow everything down.
 */
export default {
  ...base,
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '\\.long\\.test\\.ts$'],
  testSequencer: '<rootDir>/test/support/slowest-first.sequencer.js',
  maxWorkers: 3,
  workerIdleMemoryLimit: '1GB',
  // One embedded database server per worker, which each file leases and empties (test-database.ts).
  globalSetup: '<rootDir>/test/support/global-setup.js',
  globalTeardown: '<rootDir>/test/support/global-teardown.js',
};
