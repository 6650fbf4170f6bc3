import type { RequestContext } from '../http/credentials.js';
import type { Services } from '../modules/services.js';
import { createLoaders, type LoaderOptions, type Loaders } from './loaders.js';

/** The GraphQL context: the same request context the REST shims use, plus the services. */
export interface GqlContext extends RequestContext {
  services: Services;
  /** This request's batching loaders for related rows (field resolvers use them, never a query per parent). */
  loaders: Loaders;
}

/**
 * A fresh context, with fresh loaders, for each HTTP request or subscription operation. The loaders
 * are made on first use: most operations (a parse, `me`) reach no field resolver that needs one.
 */
export function createGqlContext(request: RequestContext, services: Services, loaderOptions?: LoaderOptions): GqlContext {
  let loaders: Loaders | undefined;
  return {
    ...request,
    services,
    get loaders() {
      return (loaders ??= createLoaders(services, request.principal, loaderOptions));
    },
  };
}
