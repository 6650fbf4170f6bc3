import { describeFuzzingBothDoors } from '../support/fuzz-doors.js';

// Every generated request (npm run test:long; CI runs it): fuzz-doors.test.ts sends a quarter of them in npm test.
describeFuzzingBothDoors({ rest: 1200, jobs: 600, graphql: 1200 });
