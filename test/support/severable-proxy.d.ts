/** A TCP relay whose client connections a test can cut at once (see severable-proxy.js). */
export declare function startSeverableProxy(target: { host: string; port: number }): Promise<{
  host: string;
  port: number;
  /** Cuts every open connection; returns how many there were. */
  sever(): number;
  /** Stops listening and ends every connection. */
  close(): Promise<void>;
}>;
