export declare const DEFAULT_ROOT: string
export declare function startServer(options?: {
  root?: string
  host?: string
  port?: number
  /** Called with the decoded path of every request. */
  onRequest?: (path: string) => void
}): Promise<{
  url: string
  close(): Promise<void>
}>
