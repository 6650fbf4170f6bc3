import { base } from './jest.config.js';

/** `npm run test:long`: the tests that exist to run long (a million-row export, a 30-minute recording), one file at a time. */
export default {
  ...base,
  testMatch: ['<rootDir>/test/**/*.long.test.ts'],
};
