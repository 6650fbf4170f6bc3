import { getVariableValues, GraphQLError, type DocumentNode, type GraphQLField, type GraphQLSchema } from 'graphql';
import { getComplexity, type ComplexityEstimator } from 'graphql-query-complexity';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../modules/paging.js';

/** One operation of a request as it will run: its document, the operation chosen, and the caller's variables. */
export interface CostedRequest {
  document: DocumentNode;
  operationName?: string | null;
  variables?: Record<string, unknown> | null;
}

/** Refuses an operation whose cost is past the limit; null when it may run (or cannot: see checkCost). */
export type CostCheck = (request: CostedRequest) => GraphQLError | null;

// The weights graphql-armor's cost limit used, so that the limit means what it meant: a leaf costs 1, an
// object 2 plus 1.5 times what it selects, and a page of a list as many times as the rows it can hold.
const SCALAR_COST = 1;
const OBJECT_COST = 2;
const DEPTH_COST_FACTOR = 1.5;

/**
 * The rows one field can return: for a page (a field taking `first`), `first` as the request gives it,
 * from the text or from a variable, at most the page's maximum; the default page when it is not given.
 */
function rowsOf(field: GraphQLField<unknown, unknown>, args: Record<string, unknown>): number {
  if (!field.args.some((arg) => arg.name === 'first' || arg.name === 'last')) return 1;
  const asked = args.first ?? args.last;
  if (asked == null) return DEFAULT_PAGE_SIZE;
  return typeof asked === 'number' && Number.isInteger(asked) ? Math.min(Math.max(asked, 1), MAX_PAGE_SIZE) : MAX_PAGE_SIZE;
}

const estimator: ComplexityEstimator = ({ field, args, childComplexity, node }) => {
  // Introspection is on only where the operator chose it, and bounded by the depth limit (armor's choice too).
  if (field.name === '__schema') return 0;
  if (!node.selectionSet) return SCALAR_COST;
  return (OBJECT_COST + DEPTH_COST_FACTOR * childComplexity) * rowsOf(field, args);
};

/**
 * The cost limit (GRAPHQL_MAX_COST), checked against the operation that will run with the variables it
 * will run with, so a page size given as a variable weighs what it asks for (graphql-armor's rule,
 * used before, ran at validation, before the variables are known, and counted a variable `first` as 1).
 * Both doors ask it after validation and before execution. Variables that do not fit the operation
 * are not refused here: execution refuses them in graphql-js's words before anything runs.
 */
export function costLimit(schema: GraphQLSchema, maxCost: number): CostCheck {
  // An operation without variables always weighs the same: its answer is kept with its document
  // (both doors hand the same document object for the same text), by operation name.
  const constant = new WeakMap<DocumentNode, Map<string, GraphQLError | null>>();
  return ({ document, operationName, variables }) => {
    const operation = document.definitions.find(
      (d) => d.kind === 'OperationDefinition' && (operationName ? d.name?.value === operationName : true),
    );
    if (operation?.kind !== 'OperationDefinition') return null;
    if (!operation.variableDefinitions?.length) {
      let answers = constant.get(document);
      if (!answers) constant.set(document, (answers = new Map()));
      const known = answers.get(operationName ?? '');
      if (known !== undefined) return known;
      const answer = weigh(schema, maxCost, document, operationName, {});
      answers.set(operationName ?? '', answer);
      return answer;
    }
    if (getVariableValues(schema, operation.variableDefinitions, variables ?? {}).errors) return null;
    return weigh(schema, maxCost, document, operationName, variables ?? {});
  };
}

function weigh(
  schema: GraphQLSchema,
  maxCost: number,
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown>,
): GraphQLError | null {
  let cost: number;
  try {
    cost = getComplexity({
      schema,
      query: document,
      operationName: operationName ?? undefined,
      variables,
      estimators: [estimator],
    });
  } catch (err) {
    // Past the library's count of nodes (fragments spread again and again): far past any limit.
    if (err instanceof GraphQLError) return new GraphQLError(err.message);
    throw err;
  }
  return cost > maxCost ? new GraphQLError(`Query Cost limit of ${maxCost} exceeded, found ${cost}.`) : null;
}
