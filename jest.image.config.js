import { base } from './jest.config.js';

/**
 * `npm run test:image` (deploy/local-images/check.sh, which builds the image first and names it in
 * MEDIAGATE_IMAGE): the image alone and the compose stack, in Docker, one file after the other.
 */
export default {
  ...base,
  testMatch: ['<rootDir>/test/image/**/*.image.ts'],
  // Containers start, migrate and turn healthy on a shared machine: minutes, not seconds.
  testTimeout: 600000,
};
