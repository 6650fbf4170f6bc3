import type { HotPool, Statement } from '../../db/hot-pool.js';

/** What a stream's open must know: whether its job exists, its key is revoked, its account a member now. */
export interface StreamStanding {
  jobKnown: boolean;
  keyRevoked: boolean;
  member: boolean;
}

/** One statement at each stream's open ($1 job, $2 account, $3 key or null). */
const STANDING: Statement = {
  name: 'stream_standing',
  text: `select exists (select 1 from job where id = $1::uuid and account_id = $2::uuid) as job_known,
                exists (select 1 from api_key where id = $3::uuid and revoked_at is not null) as key_revoked,
                exists (select 1 from membership where account_id = $2::uuid and status = 'active' and period_end > now()) as member`,
};

/** Bytes a stream sent, added to its job's count when the stream ends. */
const ADD_BYTES: Statement = {
  name: 'stream_add_bytes',
  text: `update job set streamed_bytes = streamed_bytes + $2::bigint where id = $1::uuid`,
};

/** The rows streams read and write, on the hot path's pool (each stream is one read at open and one write at its end). */
export class StreamRepository {
  constructor(private readonly hot: HotPool) {}

  async standing(jobId: string, accountId: string, apiKeyId: string | null): Promise<StreamStanding> {
    const [row] = await this.hot.query<{ job_known: boolean; key_revoked: boolean; member: boolean }>(STANDING, [
      jobId,
      accountId,
      apiKeyId,
    ]);
    return { jobKnown: row.job_known, keyRevoked: row.key_revoked, member: row.member };
  }

  async addStreamedBytes(jobId: string, bytes: number): Promise<void> {
    if (bytes > 0) await this.hot.query(ADD_BYTES, [jobId, bytes]);
  }
}
