import type { ApolloServerPlugin } from '@apollo/server';
import { GraphQLError } from 'graphql';

/**
 * Subscriptions are served over WebSocket only. Apollo would run one sent over HTTP as if it were a
 * query and fail on its null root value, so it is refused as a bad request before execution.
 */
export const refuseSubscriptionsOverHttp: ApolloServerPlugin = {
  async requestDidStart() {
    return {
      async didResolveOperation({ operation }) {
        if (operation?.operation === 'subscription') {
          throw new GraphQLError('Subscriptions run over WebSocket (graphql-transport-ws) at /graphql, not over HTTP.', {
            extensions: { code: 'BAD_REQUEST', http: { status: 400 } },
          });
        }
      },
    };
  },
};
