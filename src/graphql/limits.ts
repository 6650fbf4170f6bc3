import { ApolloArmor } from '@escape.tech/graphql-armor';
import { GraphQLError, type GraphQLFormattedError, type ParseOptions, type ValidationRule } from 'graphql';
import type { Config } from '../config.js';

/** What both doors (HTTP and WebSocket) apply to an operation before running it. */
export interface OperationLimits {
  /** The token cap, applied by graphql-js while parsing, before any other work. */
  parseOptions: ParseOptions;
  /** Depth, aliases, directives and cost (graphql-armor), run beside the specification's rules. */
  validationRules: ValidationRule[];
  /** Hides "Did you mean …" field suggestions (armor's mask), in either door's error formatting. */
  hideSuggestions(error: GraphQLFormattedError): GraphQLFormattedError;
}

type ArmorConfig = NonNullable<ConstructorParameters<typeof ApolloArmor>[0]>;
type RejectCallback = NonNullable<NonNullable<ArmorConfig['maxDepth']>['onReject']>[number];

/** What armor would put in place of a suggestion (its default mask). */
const SUGGESTION_MASK = '[Suggestion hidden]';

// Reported as validation errors, so both doors answer INVALID_INPUT: thrown, Apollo would answer 500.
// Armor prefixes every refusal with "Syntax Error: ", which these are not.
const report: RejectCallback = (context, error) => context?.reportError(new GraphQLError(error.message.replace(/^Syntax Error: /, '')));
const reject = { propagateOnRejection: false, onReject: [report] };

/**
 * The operation limits from configuration (GRAPHQL_MAX_*), with graphql-armor. Fragments are counted
 * as if written inline, so naming a fragment neither hides nor adds depth or cost. Armor's own token
 * limit is off: for Apollo it is a plugin that throws outside the parser (a 500); graphql-js's
 * `maxTokens` does the same counting inside the parser, on both doors.
 */
export function operationLimits(limits: Config['graphql']): OperationLimits {
  const armor = new ApolloArmor({
    maxTokens: { enabled: false },
    maxDepth: { n: limits.maxDepth, flattenFragments: true, ...reject },
    maxAliases: { n: limits.maxAliases, ...reject },
    maxDirectives: { n: limits.maxDirectives, ...reject },
    costLimit: { maxCost: limits.maxCost, flattenFragments: true, ...reject },
    // Suggestions are hidden by hideSuggestions, in each door's error formatting.
    blockFieldSuggestion: { enabled: false },
  }).protect();
  return {
    parseOptions: { maxTokens: limits.maxTokens },
    validationRules: armor.validationRules,
    // The expression armor's Apollo plugin applies to each error message.
    hideSuggestions: (error) => ({ ...error, message: error.message.replace(/Did you mean ".+"/g, SUGGESTION_MASK) }),
  };
}
