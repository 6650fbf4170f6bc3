/** A Set-Cookie header read as a browser does: name, value, and attributes by lower-cased name (flags are true). */
export interface SetCookie {
  name: string;
  value: string;
  attributes: Record<string, string | true>;
}

export function parseSetCookie(header: string | undefined): SetCookie {
  if (!header) throw new Error('no Set-Cookie header');
  const [pair, ...attributes] = header.split(';').map((part) => part.trim());
  const eq = pair.indexOf('=');
  return {
    name: pair.slice(0, eq),
    value: pair.slice(eq + 1),
    attributes: Object.fromEntries(
      attributes.map((a) => {
        const i = a.indexOf('=');
        return i < 0 ? [a.toLowerCase(), true] : [a.slice(0, i).toLowerCase(), a.slice(i + 1)];
      }),
    ),
  };
}
