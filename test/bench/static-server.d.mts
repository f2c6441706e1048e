import type http from 'node:http'

export function serveStatic(dir: string): Promise<http.Server>
