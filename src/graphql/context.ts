import type { RequestContext } from '../modules/auth.js';
import type { Services } from '../services.js';

/** The GraphQL context: the same request context the REST shims use, plus the services. */
export interface GqlContext extends RequestContext {
  services: Services;
}
