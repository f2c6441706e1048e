import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'

// `npm run sync-server` as a user runs it: a child process, found by the URL it prints.
const SCRIPT = fileURLToPath(new URL('./server.mjs', import.meta.url))
const children = new Set<ChildProcess>()

interface Running {
  child: ChildProcess
  url: string
  streams: string
  output: () => string
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

function run(args: string[]): { child: ChildProcess; output: () => string; exited: Running['exited'] } {
  const child = spawn(process.execPath, [SCRIPT, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  let output = ''
  child.stdout?.on('data', (d) => {
    output += d
  })
  child.stderr?.on('data', (d) => {
    output += d
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once('exit', (code, signal) => {
      children.delete(child)
      done({ code, signal })
    }),
  )
  return { child, output: () => output, exited }
}

async function start(args: string[]): Promise<Running> {
  const started = run(args)
  const deadline = Date.now() + 15_000
  for (;;) {
    const url = /at (http:\/\/127\.0\.0\.1:\d+)\n/.exec(started.output())?.[1]
    const streams = /streams: (\S+)\/<name>\n/.exec(started.output())?.[1]
    if (url && streams) return { ...started, url, streams }
    if (started.child.exitCode !== null || Date.now() > deadline)
      throw new Error(`the sync server did not start:\n${started.output()}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

async function stop(server: Running) {
  server.child.kill('SIGTERM')
  return server.exited
}

afterEach(() => {
  for (const child of children) child.kill('SIGKILL')
})

const json = { 'content-type': 'application/json' }

/** Creates a JSON stream (idempotent) and appends `events` as one batch. */
async function createAndAppend(stream: string, events: unknown[]) {
  const created = await fetch(stream, { method: 'PUT', headers: json })
  expect([200, 201]).toContain(created.status)
  const appended = await fetch(stream, { method: 'POST', headers: json, body: JSON.stringify(events) })
  expect(appended.status).toBe(204)
}

async function readAll(stream: string): Promise<unknown[]> {
  const response = await fetch(`${stream}?offset=-1`)
  expect(response.status).toBe(200)
  return (await response.json()) as unknown[]
}

describe('npm run sync-server', () => {
  it('serves streams on 127.0.0.1, appends and reads back, and exits 0 on SIGTERM', async () => {
    const server = await start(['--port', '0'])
    expect(server.streams).toBe(`${server.url}/v1/stream`)
    const stream = `${server.streams}/session-a`
    const events = [
      { seq: 1, type: 'session/created', data: { title: 'a' } },
      { seq: 2, type: 'user/message', data: { text: 'hello' } },
    ]
    await createAndAppend(stream, events)
    // A JSON stream's batch is flattened: each element is one message.
    expect(await readAll(stream)).toEqual(events)

    expect(await stop(server)).toEqual({ code: 0, signal: null })
    expect(server.output()).toContain('stopped (SIGTERM)')
    await expect(fetch(stream)).rejects.toThrow()
  })

  it('lets a page on another origin append with Producer headers (CORS preflight) and read the offset', async () => {
    const server = await start(['--port', '0'])
    const stream = `${server.streams}/cors`
    const origin = 'http://127.0.0.1:5173' // the playground's dev server
    const preflight = await fetch(stream, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,producer-id,producer-epoch,producer-seq',
      },
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*')
    expect(preflight.headers.get('access-control-allow-methods')).toMatch(/\bPOST\b/)
    const allowed = (preflight.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/,\s*/)
    for (const header of ['content-type', 'producer-id', 'producer-epoch', 'producer-seq'])
      expect(allowed).toContain(header)

    await fetch(stream, { method: 'PUT', headers: { ...json, origin } })
    const read = await fetch(`${stream}?offset=-1`, { headers: { origin } })
    expect(read.headers.get('access-control-allow-origin')).toBe('*')
    // A page can only read the headers the server exposes; the sync needs the offset and producer state.
    const exposed = (read.headers.get('access-control-expose-headers') ?? '').toLowerCase()
    for (const header of ['stream-next-offset', 'stream-up-to-date', 'producer-expected-seq'])
      expect(exposed).toContain(header)
    expect(read.headers.get('stream-next-offset')).toBeTruthy()
    await stop(server)
  })

  it('keeps streams across a restart with --data DIR', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sessionline-sync-server-'))
    try {
      const first = await start(['--port', '0', '--data', dir])
      expect(first.output()).toContain(`in ${dir}`)
      const events = [
        { seq: 1, type: 'session/created' },
        { seq: 2, type: 'turn/start' },
      ]
      await createAndAppend(`${first.streams}/kept`, events)
      expect((await stop(first)).code).toBe(0)

      const second = await start(['--port', '0', '--data', dir])
      expect(await readAll(`${second.streams}/kept`)).toEqual(events)
      expect((await stop(second)).code).toBe(0)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('loses its streams on restart when in memory', async () => {
    const first = await start(['--port', '0'])
    await createAndAppend(`${first.streams}/gone`, [{ seq: 1 }])
    await stop(first)
    const second = await start(['--port', '0'])
    expect((await fetch(`${second.streams}/gone?offset=-1`)).status).toBe(404)
    await stop(second)
  })

  it('refuses any address but 127.0.0.1, a port in use and unknown arguments', async () => {
    const wide = run(['--port', '0', '--host', '0.0.0.0'])
    expect((await wide.exited).code).toBe(1)
    expect(wide.output()).toContain('127.0.0.1 only')
    const unknown = run(['--verbose'])
    expect((await unknown.exited).code).toBe(2)
    expect(unknown.output()).toContain('unknown argument --verbose')
    const taken = await start(['--port', '0'])
    const second = run(['--port', new URL(taken.url).port])
    expect((await second.exited).code).toBe(1)
    expect(second.output()).toContain('EADDRINUSE')
    await stop(taken)
    const badPort = run(['--port', 'http'])
    expect((await badPort.exited).code).toBe(2)
  })
})
