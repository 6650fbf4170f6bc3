import { GraphQLDateTime, GraphQLJSONObject, GraphQLSafeInt } from 'graphql-scalars';

/** Credits cross the wire in one declared form: a JSON number that is always a safe integer. */
export const Credits = GraphQLSafeInt;
export const DateTime = GraphQLDateTime;
export const JSONObject = GraphQLJSONObject;
