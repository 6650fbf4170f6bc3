import { base } from './jest.config.js';

/** `npm run test:cluster`: several gateway processes on one PostgreSQL and one Redis (needs DATABASE_URL). */
export default {
  ...base,
  testMatch: ['<rootDir>/test/cluster/**/*.cluster.ts'],
  testTimeout: 120000,
};
