import { type ClassType, Field, ObjectType } from 'type-graphql';
import type { PageInfo as PageInfoShape } from '../modules/paging.js';
import { InheritsScope } from './scopes.js';

// The paging helpers live in a neutral module (repositories use them); GraphQL code may keep
// importing them from here.
export { decodeCursor, encodeCursor, pageSize, toPage, type Page } from '../modules/paging.js';

@ObjectType({ simpleResolvers: true, description: 'Where a page of a list ends, and whether more follows' })
export class PageInfo implements PageInfoShape {
  @Field({ description: 'True when another page follows; ask for it with after: endCursor' }) hasNextPage!: boolean;
  @Field(() => String, { nullable: true, description: 'The cursor of the last edge of this page; null when the page is empty' }) endCursor!:
    | string
    | null;
}

/** A Relay connection type for `Node`; `plural` names the items in the descriptions. */
export function Connection<T extends object>(node: ClassType<T>, name: string, plural: string) {
  @ObjectType(`${name}Edge`, { simpleResolvers: true, description: `One of the ${plural} with its cursor` })
  class Edge {
    @Field({ description: 'Opaque; pass it as after to continue after this edge (stays correct when rows are added meanwhile)' })
    cursor!: string;
    @Field(() => node, { description: `One of the ${plural}` })
    @InheritsScope()
    node!: T;
  }
  @ObjectType(`${name}Connection`, { simpleResolvers: true, description: `A page of ${plural} (Relay connection)` })
  class ConnectionType {
    @Field(() => [Edge], { description: 'The page, in the list’s order' })
    @InheritsScope()
    edges!: Edge[];
    @Field(() => PageInfo, { description: 'Whether more follows, and the cursor to ask for it' })
    @InheritsScope()
    pageInfo!: PageInfo;
  }
  return ConnectionType;
}
