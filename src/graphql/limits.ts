import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxDirectivesRule } from '@escape.tech/graphql-armor-max-directives';
import { GraphQLError, type GraphQLFormattedError, type GraphQLSchema, type ParseOptions, type ValidationRule } from 'graphql';
import type { Config } from '../config.js';
import { costLimit, type CostCheck } from './operation-cost.js';

/** What both doors (HTTP and WebSocket) apply to an operation before running it. */
export interface OperationLimits {
  /** The token cap, applied by graphql-js while parsing, before any other work. */
  parseOptions: ParseOptions;
  /** Depth, aliases and directives (graphql-armor), run beside the specification's rules. */
  validationRules: ValidationRule[];
  /** The cost limit, asked after validation with the variables the operation will run with (operation-cost.ts). */
  checkCost: CostCheck;
  /**
   * With introspection off, drops graphql-js's "Did you mean …?" from a message (it would spell out
   * the schema piece by piece); with it on, the schema is public and the hint helps, so it stays.
   */
  hideSuggestions(error: GraphQLFormattedError): GraphQLFormattedError;
}

type RejectCallback = NonNullable<NonNullable<Parameters<typeof maxDepthRule>[0]>['onReject']>[number];

// Reported as validation errors, so both doors answer INVALID_INPUT (thrown, they would escape the validator).
// Armor prefixes every refusal with "Syntax Error: ", which these are not.
const report: RejectCallback = (context, error) => context?.reportError(new GraphQLError(error.message.replace(/^Syntax Error: /, '')));
const reject = { propagateOnRejection: false, onReject: [report] };

/**
 * The operation limits from configuration (GRAPHQL_MAX_*), with graphql-armor, and the cost limit
 * (operation-cost.ts), which needs the variables. Fragments are counted as if written inline, so
 * naming a fragment neither hides nor adds depth or cost. Tokens are counted by graphql-js's own
 * `maxTokens`, inside the parser (armor's token limit wraps the parser of a server framework rather
 * than being a rule).
 */
export function operationLimits(limits: Config['graphql'], schema: GraphQLSchema): OperationLimits {
  const validationRules = [
    maxDepthRule({ n: limits.maxDepth, flattenFragments: true, ...reject }),
    maxAliasesRule({ n: limits.maxAliases, ...reject }),
    maxDirectivesRule({ n: limits.maxDirectives, ...reject }),
  ];
  return {
    parseOptions: { maxTokens: limits.maxTokens },
    validationRules,
    checkCost: costLimit(schema, limits.maxCost),
    hideSuggestions: limits.introspection
      ? (error) => error
      : (error) => ({ ...error, message: error.message.replace(/\s*Did you mean .*\?$/s, '') }),
  };
}
