import { redactor, withoutSqlLiterals } from '../../src/telemetry.js';

describe('what leaves the process in a span attribute', () => {
  const redact = redactor(['configured-secret-value']);

  it('keeps the shape of SQL and drops every literal MikroORM wrote into it', () => {
    expect(withoutSqlLiterals(`select * from api_key where public_id = 'AbC123' and secret_hash = 'x''y' limit 1`)).toBe(
      'select * from api_key where public_id = ? and secret_hash = ? limit ?',
    );
    expect(withoutSqlLiterals(`insert into webhook_secret (secret) values (E'whsec_\\'abc'), ($tag$raw ' text$tag$), ($$x$$)`)).toBe(
      'insert into webhook_secret (secret) values (?), (?), (?)',
    );
    // Identifiers, aliases, casts and placeholders are not values.
    expect(withoutSqlLiterals(`select "e0"."id", t1.col2 from job as e0 where e0.n > -2.5e3 and x = $1::int4`)).toBe(
      'select "e0"."id", t1.col2 from job as e0 where e0.n > ? and x = $1::int4',
    );
    expect(redact('db.query.text', `update job set result = '{"url":"https://x/?t=1"}'::jsonb`)).toBe('update job set result = ?::jsonb');
  });

  it('drops the token of a stream URL, a credential for its lifetime, from paths and URLs', () => {
    expect(redact('url.path', '/api/streams/AbC-123_xyz.token')).toBe('/api/streams/[redacted]');
    expect(redact('http.url', 'http://gw.example/api/streams/AbC-123?x=1')).toBe('http://gw.example/api/streams/[redacted]?x=REDACTED');
    expect(redact('span.name', 'GET /api/streams/:token')).toBe('GET /api/streams/:token');
  });

  it('drops URL passwords and query values, keys and secrets wherever they appear', () => {
    expect(redact('url.full', 'https://cdn.example/v.mp4?token=abc&sig')).toBe('https://cdn.example/v.mp4?token=REDACTED&REDACTED');
    expect(redact('url.query', '?a=1&b=2')).toBe('?a=REDACTED&b=REDACTED');
    expect(redact('url.path', '/api/parse?key=abc')).toBe('/api/parse?key=REDACTED');
    expect(redact('exception.message', 'connect to postgresql://u:pw@db:5432/x failed')).toBe(
      'connect to postgresql://u:REDACTED@db:5432/x failed',
    );
    expect(redact('exception.message', 'bad key mg_live_AbCdEf012345_secretpart0123 and whsec_c2VjcmV0 with Bearer abc.def')).toBe(
      'bad key mg_live_REDACTED and whsec_REDACTED with Bearer REDACTED',
    );
    expect(redact('any', 'the configured-secret-value leaked')).toBe('the REDACTED leaked');
    expect(redact('graphql.source', 'mutation { parse(input: {url: "https://x/?t=1"}) { id } }')).toBe(
      'mutation { parse(input: {url: "REDACTED"}) { id } }',
    );
    expect(redact('http.response.status_code', 200)).toBe(200);
    expect(redact('list', ['a', 'mg_live_x_y'])).toEqual(['a', 'mg_live_REDACTED']);
  });
});
