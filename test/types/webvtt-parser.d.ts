/** Just what the tests use of webvtt-parser (w3c/webvtt.js), which ships no types. */
declare module 'webvtt-parser' {
  export interface WebVTTNode {
    type: 'text' | 'object' | 'timestamp';
    /** For objects: c, i, b, u, ruby, rt, v or lang. */
    name?: string;
    classes?: string[];
    /** Text, the annotation of a <v> or <lang> object, or a timestamp in seconds. */
    value?: string | number;
    children?: WebVTTNode[];
  }

  export interface WebVTTCue {
    id: string;
    /** Seconds. */
    startTime: number;
    endTime: number;
    text: string;
    tree: { children: WebVTTNode[] };
  }

  export interface WebVTTError {
    message: string;
    line: number;
    col?: number;
  }

  export class WebVTTParser {
    constructor(entities?: Record<string, string>);
    parse(
      input: string,
      mode?: 'subtitles' | 'metadata' | 'chapters',
    ): { cues: WebVTTCue[]; errors: WebVTTError[]; time: number; styles: string[] };
  }

  const webvtt: { WebVTTParser: typeof WebVTTParser };
  export default webvtt;
}
