/**
 * `Content-Disposition: inline` with a file name made from a title (RFC 6266): an ASCII fallback in
 * `filename`, the title itself in `filename*` (RFC 8187, UTF-8, percent-encoded).
 */
export function contentDisposition(title: string | null, extension: string | null): string {
  const base =
    (title ?? '')
      .normalize('NFC')
      // Nothing a file system or a header refuses: controls, separators of paths, quotes.
      .split('')
      .map((c) => (c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f || '"\\/:*?<>|'.includes(c) ? ' ' : c))
      .join('')
      .replace(/\s+/g, ' ')
      .trim()
      .slice(0, 120) || 'media';
  const name = extension ? `${base}.${extension}` : base;
  const ascii = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^\x20-\x7e]+/g, '_')
    .replace(/%/g, '_');
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `inline; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}
