import type { ApolloServerPlugin } from '@apollo/server';
import { GraphQLError } from 'graphql';

/**
 * What GraphQL over HTTP adds to Apollo's pipeline, in one plugin so that a request walks one set
 * of hooks:
 * - subscriptions are served over WebSocket only; Apollo would run one sent over HTTP as if it were
 *   a query and fail on its null root value, so it is refused as a bad request before execution;
 * - every answer is the caller's own data, so no cache along the way may keep it (`no-store`).
 */
export const httpRules: ApolloServerPlugin = {
  async requestDidStart() {
    return {
      async didResolveOperation({ operation }) {
        if (operation?.operation === 'subscription') {
          throw new GraphQLError('Subscriptions run over WebSocket (graphql-transport-ws) at /graphql, not over HTTP.', {
            extensions: { code: 'BAD_REQUEST', http: { status: 400 } },
          });
        }
      },
      async willSendResponse({ response }) {
        response.http.headers.set('cache-control', 'no-store');
      },
    };
  },
};
