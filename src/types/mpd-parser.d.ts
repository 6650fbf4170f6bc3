/** The part of mpd-parser's output (an m3u8-parser-like manifest) that the DASH reader uses. */
declare module 'mpd-parser' {
  export interface MpdSegment {
    uri: string;
    resolvedUri: string;
    duration: number;
    map?: { uri: string; resolvedUri: string };
  }
  export interface MpdPlaylist {
    attributes: {
      NAME?: string;
      BANDWIDTH?: number;
      CODECS?: string;
      RESOLUTION?: { width: number; height: number };
      AUDIO?: string;
    };
    resolvedUri?: string;
    segments?: MpdSegment[];
    sidx?: { uri: string; resolvedUri: string; duration: number };
  }
  export interface MpdManifest {
    playlists?: MpdPlaylist[];
    mediaGroups?: { AUDIO?: Record<string, Record<string, { default?: boolean; language?: string; playlists?: MpdPlaylist[] }>> };
  }
  export function parse(
    manifest: string,
    options?: { manifestUri?: string; eventHandler?: (e: { type: string; message: string }) => void },
  ): MpdManifest;
}
