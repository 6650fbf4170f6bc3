import Sequencer from '@jest/test-sequencer';

/**
 * The slowest test files, with the seconds each took with three workers on this 2-core machine (a quiet
 * run of 2026-11-28; only their order matters). With no timings of its own yet (a fresh clone), jest would order files by
 * size, and a slow file started last keeps one worker busy alone at the end.
 */
const KNOWN = {
  'test/model/ledger.model.test.ts': 41,
  'test/integration/shutdown.test.ts': 27,
  'test/integration/faults.test.ts': 24,
  'test/integration/transcribe-cost.test.ts': 22,
  'test/integration/cli.test.ts': 20,
  'test/integration/webhooks.test.ts': 19,
  'test/integration/config-check.test.ts': 19,
  'test/integration/fuzz-doors.test.ts': 17,
  'test/integration/embedded-gate-fuzz.test.ts': 16,
  'test/integration/cli-client.test.ts': 16,
  'test/integration/graphql-trusted-documents.test.ts': 16,
  'test/integration/probe-budget.test.ts': 15,
  'test/integration/credit-history-csv.test.ts': 15,
  'test/e2e/account-ui.test.ts': 14,
  'test/integration/long-media.test.ts': 14,
  'test/integration/ytdlp.test.ts': 14,
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
