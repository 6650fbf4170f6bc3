import { ClassType, Field, ObjectType } from 'type-graphql';
import type { PageInfo as PageInfoShape } from '../modules/paging.js';

// The paging helpers live in a neutral module (repositories use them); GraphQL code may keep
// importing them from here.
export { decodeCursor, encodeCursor, pageSize, toPage, type Page } from '../modules/paging.js';

@ObjectType()
export class PageInfo implements PageInfoShape {
  @Field() hasNextPage!: boolean;
  @Field(() => String, { nullable: true }) endCursor!: string | null;
}

/** A Relay connection type for `Node`. */
export function Connection<T extends object>(node: ClassType<T>, name: string) {
  @ObjectType(`${name}Edge`)
  class Edge {
    @Field() cursor!: string;
    @Field(() => node) node!: T;
  }
  @ObjectType(`${name}Connection`)
  class ConnectionType {
    @Field(() => [Edge]) edges!: Edge[];
    @Field(() => PageInfo) pageInfo!: PageInfo;
  }
  return ConnectionType;
}
