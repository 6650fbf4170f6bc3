import { HeaderMap, type ApolloServerPlugin } from '@apollo/server';
import { GraphQLError } from 'graphql';
import { AppError } from '../errors.js';
import type { RateLimits } from '../http/rate-limit.js';
import { storedText, type ApqCache } from './apq-cache.js';
import type { GqlContext } from './context.js';
import type { CostCheck } from './operation-cost.js';

const DAY_SECONDS = 24 * 3600;

export interface ApqRegistrationOptions {
  cache: ApqCache;
  checkCost: CostCheck;
  limits: RateLimits;
  /** GRAPHQL_APQ_REGISTRATIONS_PER_DAY and GRAPHQL_APQ_BYTES_PER_DAY. */
  perDay: number;
  bytesPerDay: number;
}

/**
 * Who may register an automatic persisted query, and how much: what one caller can make the gateway
 * keep (in memory and in the persisted queries' Redis) is bounded by an account's daily quota.
 * - An operation sent with its text and hash registers only once it validated and is within the cost
 *   limit, and only for an authenticated caller; an anonymous one's runs, unregistered (its hash alone
 *   stays PersistedQueryNotFound, as it was).
 * - A hash already known costs nothing; a new one takes one registration and its stripped text's bytes
 *   of the account's quotas (counted beside the rate limits, where nothing evicts them). Past either,
 *   429 RATE_LIMITED with Retry-After: the caller may send the text without extensions.persistedQuery.
 * - What is stored is the text stripped of comments and padding, so padding costs no storage.
 */
export function apqRegistrationPlugin({
  cache,
  checkCost,
  limits,
  perDay,
  bytesPerDay,
}: ApqRegistrationOptions): ApolloServerPlugin<GqlContext> {
  const registrations = limits.quota('apq-registrations', perDay, DAY_SECONDS);
  const bytes = limits.quota('apq-bytes', bytesPerDay, DAY_SECONDS);
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ metrics, queryHash, source, document, operationName, request, contextValue }) {
          // Apollo says so when the request sent its text with a matching hash.
          if (!metrics.persistedQueryRegister || !queryHash || !source) return;
          if (checkCost({ document, operationName, variables: request.variables })) return;
          const principal = await contextValue.principal().catch(() => null);
          if (!principal || (await cache.has(queryHash))) return;
          const stripped = storedText(source);
          const size = Buffer.byteLength(stripped);
          for (const count of [await registrations(principal.accountId, 1), await bytes(principal.accountId, size)]) {
            if (!count.refused) continue;
            const retryAfter = Number(count.refused.details?.retryAfterSeconds ?? DAY_SECONDS);
            const refusal = new AppError(
              'RATE_LIMITED',
              `This account has registered its quota of persisted queries for the day (${perDay} documents, ${bytesPerDay} bytes); retry in ${retryAfter} s, or send the query without extensions.persistedQuery.`,
              { retryAfterSeconds: retryAfter, registrationsPerDay: perDay, bytesPerDay, windowSeconds: DAY_SECONDS },
            );
            throw new GraphQLError(refusal.message, {
              originalError: refusal,
              extensions: { http: { status: 429, headers: new HeaderMap([['retry-after', String(retryAfter)]]) } },
            });
          }
          await cache.register(queryHash, stripped);
        },
      };
    },
  };
}
