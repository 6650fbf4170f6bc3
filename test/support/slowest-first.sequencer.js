import Sequencer from '@jest/test-sequencer';

/**
 * The slowest test files, with the seconds each took with two workers on this 2-core machine (only
 * their order matters). With no timings of its own yet (a fresh clone), jest would order files by
 * size, and a slow file started last keeps one worker busy alone at the end.
 */
const KNOWN = {
  'test/model/ledger.model.test.ts': 340,
  'test/integration/faults.test.ts': 300,
  'test/integration/webhooks.test.ts': 140,
  'test/integration/ledger-batching.test.ts': 130,
  'test/integration/transcribe.test.ts': 120,
  'test/integration/parse-matrix.test.ts': 105,
  'test/integration/sessions.test.ts': 104,
  'test/e2e/account-oidc.test.ts': 99,
  'test/integration/key-cache.test.ts': 99,
  'test/integration/cli.test.ts': 93,
  'test/integration/graphql-over-http.test.ts': 90,
};

/** Jest's order (failed first, then slowest by the last run's timings, then largest), with KNOWN standing in for timings jest has not seen yet. */
export default class SlowestFirst extends Sequencer {
  sort(tests) {
    const failed = (test) => (this.hasFailed(test) ? 1 : 0);
    const ms = (test) => this.time(test) ?? (KNOWN[test.path.slice(test.context.config.rootDir.length + 1)] ?? 0) * 1000;
    const size = (test) => test.context.hasteFS.getSize(test.path) ?? 0;
    return [...tests].sort((a, b) => failed(b) - failed(a) || ms(b) - ms(a) || size(b) - size(a));
  }
}
