/** The only address the sync server listens on. */
export declare const LOOPBACK: '127.0.0.1'
/** `npm run sync-server`'s port unless `--port` says otherwise. */
export declare const DEFAULT_PORT: number
export interface SyncServerOptions {
  /** Anything but `127.0.0.1` is refused. */
  host?: string
  /** 0 (the default) picks a free port. */
  port?: number
  /** File-backed storage in this directory (created if missing); omitted: in memory. */
  dataDir?: string
  /** How long the server holds a long-poll read open, in ms (the reference server's default: 30 s). */
  longPollTimeout?: number
}
export interface SyncServer {
  /** `http://127.0.0.1:<port>` */
  url: string
  /** The base of stream URLs: a stream is `${streams}/<name>`. */
  streams: string
  close(): Promise<void>
}
/** Starts the Durable Streams reference server on 127.0.0.1. */
export declare function startSyncServer(options?: SyncServerOptions): Promise<SyncServer>
/** The command line (`--port N --data DIR --host H`) into options; throws on anything else. */
export declare function parseArguments(argv: string[]): SyncServerOptions & { port: number }
