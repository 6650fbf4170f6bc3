import { describeExportMemory } from '../support/credit-history-memory.js';

// A million rows: the bound on memory means something only for a history this long.
describeExportMemory(1_000_000);
