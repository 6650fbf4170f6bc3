/** Where the workers find their database servers' addresses (see global-setup.js). */
export declare const SHARED_EMBEDDED_VARIABLE: string;
export declare const SERVERS: unique symbol;
export default function globalSetup(globalConfig: { maxWorkers: number }): Promise<void>;
