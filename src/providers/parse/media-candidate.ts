import type { MediaType } from './media-types.js';

/** One place on the page that names a media URL, with what the page says about it. */
export interface Candidate {
  url: string | null | undefined;
  /** The kind the context implies (og:audio, AudioObject, <audio>); a declared MIME type overrules it. */
  kind: 'video' | 'audio';
  type?: string | null;
  width?: number | null;
  height?: number | null;
  /** A quality label such as "720p" (the `size`, `res` or `label` attribute of <source>). */
  label?: string | null;
  /** A container named without a MIME type (JSON-LD encodingFormat "mp4"); it outranks the URL's extension. */
  declared?: MediaType | null;
  /** og:video without a type is usually an embed page, so it counts only with a media type or extension. */
  needsEvidence?: boolean;
  /** Which media of the page it belongs to: one <video> element, one JSON-LD object, one Open Graph stem. */
  group: string;
}
