import type { ApolloServerPlugin } from '@apollo/server';
import { GraphQLError } from 'graphql';
import type { GqlContext } from './context.js';
import type { CostCheck } from './operation-cost.js';

/**
 * The cost limit on the HTTP door: once Apollo has the operation that will run, and before it runs,
 * its cost with the request's variables (operation-cost.ts); past the limit, 400 INVALID_INPUT, as a
 * validation error is. The WebSocket door asks the same check (documents.ts).
 */
export function costLimitPlugin(checkCost: CostCheck): ApolloServerPlugin<GqlContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ document, operationName, request }) {
          const refused = checkCost({ document, operationName, variables: request.variables });
          if (refused) throw new GraphQLError(refused.message, { extensions: { http: { status: 400 } } });
        },
      };
    },
  };
}
