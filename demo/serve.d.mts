export declare const DEFAULT_ROOT: string
export declare function startServer(options?: {
  root?: string
  host?: string
  port?: number
  /** Called with the decoded path of every request. */
  onRequest?: (path: string) => void
  /** A Durable Streams server's URL: requests under `/v1/stream/` are forwarded to it (one origin). */
  syncServer?: string
}): Promise<{
  url: string
  close(): Promise<void>
}>
