import { GraphQLError, Kind, type ASTVisitor, type ValidationContext, type ValidationRule } from 'graphql';

/** Refuses operations nested deeper than `max` selection levels (fragments followed). */
export function depthLimit(max: number): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    const fragments = new Map(context.getDocument().definitions.filter((d) => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]));
    const depthOf = (node: { selectionSet?: { selections: readonly any[] } }, depth: number, seen: Set<string>): number => {
      if (!node.selectionSet) return depth;
      let deepest = depth;
      for (const sel of node.selectionSet.selections) {
        if (sel.kind === Kind.FIELD) deepest = Math.max(deepest, depthOf(sel, depth + 1, seen));
        else if (sel.kind === Kind.INLINE_FRAGMENT) deepest = Math.max(deepest, depthOf(sel, depth, seen));
        else if (sel.kind === Kind.FRAGMENT_SPREAD && !seen.has(sel.name.value)) {
          const frag = fragments.get(sel.name.value);
          if (frag) deepest = Math.max(deepest, depthOf(frag, depth, new Set([...seen, sel.name.value])));
        }
      }
      return deepest;
    };
    return {
      OperationDefinition(node) {
        const depth = depthOf(node, 0, new Set());
        if (depth > max) context.reportError(new GraphQLError(`The operation is ${depth} levels deep; the limit is ${max}.`, { nodes: [node] }));
      },
    };
  };
}

/** Refuses operations with more than `max` aliased fields (alias-based amplification). */
export function aliasLimit(max: number): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    let aliases = 0;
    return {
      Field(node) {
        if (node.alias && ++aliases === max + 1) {
          context.reportError(new GraphQLError(`The operation uses more than ${max} aliases.`, { nodes: [node] }));
        }
      },
    };
  };
}
