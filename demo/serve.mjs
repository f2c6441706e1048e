// A tiny static server for the built demo (`npm run demo:preview`, and the browser tests).
// No caching headers beyond `no-cache`: the service worker owns offline caching.
import { createReadStream, existsSync } from 'node:fs'
import { stat } from 'node:fs/promises'
import { createServer, request as forward } from 'node:http'
import { extname, join, normalize, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.webmanifest': 'application/manifest+json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.wasm': 'application/wasm',
  '.map': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
}

export const DEFAULT_ROOT = fileURLToPath(new URL('./dist/', import.meta.url))

/** Where a sync server's streams live; the only paths `syncServer` forwards. */
const STREAMS = '/v1/stream/'

/**
 * Passes one request to the sync server as it came (method, headers, body) and its answer back
 * as it comes, so a long-poll stays open until the sync server answers it; a client that goes
 * away ends the forwarded request too.
 */
function proxy(target, request, response) {
  const upstream = forward(
    new URL(request.url ?? '/', target),
    { method: request.method, headers: { ...request.headers, host: new URL(target).host } },
    (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(response)
    },
  )
  upstream.on('error', () => {
    if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain' })
    response.end('the sync server did not answer')
  })
  response.on('close', () => upstream.destroy())
  request.pipe(upstream)
}

/**
 * Serves `root` on `host:port` (port 0 picks a free one); `onRequest` hears every path asked for.
 * With `syncServer` (a Durable Streams server's URL, e.g. `npm run sync-server`'s), requests
 * under `/v1/stream/` go to it, so the playground and its streams share one origin.
 * @returns the base URL and a `close()` that also drops open keep-alive sockets.
 */
export async function startServer({
  root = DEFAULT_ROOT,
  host = '127.0.0.1',
  port = 0,
  onRequest,
  syncServer,
} = {}) {
  const base = resolve(root)
  const server = createServer(async (request, response) => {
    try {
      const path = decodeURIComponent(new URL(request.url ?? '/', 'http://x').pathname)
      onRequest?.(path)
      if (syncServer && path.startsWith(STREAMS)) {
        proxy(syncServer, request, response)
        return
      }
      let file = normalize(join(base, path))
      if (file !== base && !file.startsWith(base + sep)) {
        response.writeHead(403).end()
        return
      }
      let info = await stat(file).catch(() => undefined)
      if (info?.isDirectory()) {
        file = join(file, 'index.html')
        info = await stat(file).catch(() => undefined)
      }
      if (!info?.isFile()) {
        response.writeHead(404, { 'content-type': 'text/plain' }).end('not found')
        return
      }
      response.writeHead(200, {
        'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
        'content-length': info.size,
        'cache-control': 'no-cache',
      })
      if (request.method === 'HEAD') response.end()
      else createReadStream(file).pipe(response)
    } catch {
      if (!response.headersSent) response.writeHead(400)
      response.end()
    }
  })
  await new Promise((done, fail) => {
    server.once('error', fail)
    server.listen(port, host, () => done(undefined))
  })
  const address = server.address()
  const url = `http://${host}:${typeof address === 'object' && address ? address.port : port}/`
  return {
    url,
    close: () =>
      new Promise((done) => {
        server.closeAllConnections()
        server.close(() => done(undefined))
      }),
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (!existsSync(join(DEFAULT_ROOT, 'index.html'))) {
    console.error('demo/dist has no build yet: run `npm run demo:build` first')
    process.exit(1)
  }
  const port = Number(process.env.PORT ?? process.argv[2] ?? 4173)
  const syncServer = process.env.SYNC_SERVER || undefined
  const { url } = await startServer({ port, syncServer })
  console.log(`sessionline demo (built) at ${url}`)
  if (syncServer) console.log(`streams (${STREAMS}…) go to ${syncServer}: the sync server URL is ${url}`)
}
