export declare const DEFAULT_ROOT: string
export declare function startServer(options?: { root?: string; host?: string; port?: number }): Promise<{
  url: string
  close(): Promise<void>
}>
