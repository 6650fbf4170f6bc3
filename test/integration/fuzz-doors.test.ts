import { describeFuzzingBothDoors } from '../support/fuzz-doors.js';

// A quarter of the generated requests, same seed and checks; fuzz-doors.long.test.ts (npm run test:long, CI) sends them all.
describeFuzzingBothDoors({ rest: 300, jobs: 150, graphql: 300 });
