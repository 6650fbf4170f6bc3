import type { migrate, MIGRATIONS } from '../../src/db/database.js';
import type { startEmbedded } from '../../src/db/embedded.js';
import type { openOrm } from '../../src/root.js';

export declare function templateKey(migrations: typeof MIGRATIONS): string;
export declare function writeMigratedTemplate(
  file: string,
  parts: { startEmbedded: typeof startEmbedded; openOrm: typeof openOrm; migrate: typeof migrate },
): Promise<void>;
