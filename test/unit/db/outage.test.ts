import { databaseUnavailable } from '../../../src/db/outage.js';

/** Which errors mean "the database connection was lost" (503, retry) rather than a bug (500). */
describe('databaseUnavailable', () => {
  const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code });

  it.each([
    ['a backend killed by an operator (57P01)', pgError('57P01', 'terminating connection due to administrator command')],
    ['a server shutting down (57P02) or starting (57P03)', pgError('57P03')],
    ['a connection failure (class 08)', pgError('08006')],
    ['no connection slot free (53300)', pgError('53300')],
    ['the socket reset, from another realm', { errno: -104, code: 'ECONNRESET', syscall: 'write' }],
    ['the connection refused', pgError('ECONNREFUSED')],
    ['pg saying the connection ended', new Error('Connection terminated unexpectedly')],
    ['a client that broke earlier', new Error('Client has encountered a connection error and is not queryable')],
    ['a client whose connection was closed under it', new Error('Client was closed and is not queryable')],
    ['the pool waiting in vain', new Error('timeout exceeded when trying to connect')],
    ['one wrapped in a cause', new Error('query failed', { cause: pgError('57P01') })],
    ['one that graphql-js wrapped', Object.assign(new Error('Unexpected error value'), { thrownValue: { code: 'ECONNRESET' } })],
  ])('is 503 PROVIDER_UNAVAILABLE for %s', (_label, err) => {
    expect(databaseUnavailable(err)).toMatchObject({ code: 'PROVIDER_UNAVAILABLE', status: 503 });
  });

  it.each([
    ['a unique violation', pgError('23505')],
    ['a syntax error', pgError('42601')],
    ['a check constraint', pgError('23514')],
    ['a plain bug', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['nothing at all', undefined],
    ['a string', 'ECONNRESET'],
  ])('is nothing for %s', (_label, err) => {
    expect(databaseUnavailable(err)).toBeNull();
  });

  it('does not loop on a cause that points back at itself', () => {
    const err: Error & { cause?: unknown } = new Error('loop');
    err.cause = err;
    expect(databaseUnavailable(err)).toBeNull();
  });
});
