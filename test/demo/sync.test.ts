/**
 * The playground's sync follower (demo/sync.ts) over a real engine with sync plugged in and the
 * real Durable Streams server: whatever order the page switches sessions in, without waiting,
 * the worker ends up syncing the last one wanted and no other.
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import { SyncFollower, SyncServerUrl } from '../../demo/sync'
import { sessionIdOf } from '../../demo/ui/open-synced'
import { device, startServer, turn } from '../sync/support'

let server: { url: string; stop(): Promise<void> }
beforeAll(async () => {
  server = await startServer()
})
afterAll(async () => {
  await server.stop()
})

test('quick switches A → B → C, none awaited, leave only C syncing; turning sync off stops it', async () => {
  const { engine } = device('follower')
  try {
    const ids: string[] = []
    for (const title of ['A', 'B', 'C']) {
      const session = await engine.createSession({ title })
      await turn(engine, session.id, `hello ${title}`)
      ids.push(session.id)
    }
    const failures: unknown[] = []
    const follower = new SyncFollower(engine, (_, error) => failures.push(error))
    const url = server.url
    // As the page does: each open asks, nothing waits for the previous one.
    void follower.follow({ sessionId: ids[0]!, url })
    void follower.follow({ sessionId: ids[1]!, url })
    await follower.follow({ sessionId: ids[2]!, url })
    expect(follower.current?.sessionId).toBe(ids[2])
    const states = async () => Promise.all(ids.map(async (id) => (await engine.syncStatus(id))?.state))
    // A's and B's loops were stopped (or never started); C's pushed its turn and is at the tail.
    await expect.poll(states, { timeout: 10_000 }).toEqual([undefined, undefined, 'live'])

    // A restart (back online) keeps it syncing; off stops it.
    await follower.restart()
    expect((await engine.syncStatus(ids[2]!))?.state).toBeDefined()
    await follower.follow(undefined)
    expect(await states()).toEqual([undefined, undefined, undefined])
    expect(follower.current).toBeUndefined()
    expect(failures).toEqual([])
  } finally {
    await engine.close()
  }
})

test('a session the engine refuses to sync (an unknown URL scheme) is reported and not counted as synced', async () => {
  const { engine } = device('refused')
  try {
    const session = await engine.createSession({ title: 'x' })
    const failures: string[] = []
    const follower = new SyncFollower(engine, (target, error) =>
      failures.push(`${target.sessionId}: ${(error as Error).name}`),
    )
    await follower.follow({ sessionId: session.id, url: 'ftp://127.0.0.1/' })
    expect(failures).toEqual([`${session.id}: SessionlineError`])
    expect(follower.current).toBeUndefined()
    expect(await engine.syncStatus(session.id)).toBeUndefined()
  } finally {
    await engine.close()
  }
})

test('Settings take an http(s) sync server URL without its trailing slash; the open dialog takes an id or a link', () => {
  expect(SyncServerUrl.parse('http://127.0.0.1:4437/')).toBe('http://127.0.0.1:4437')
  expect(SyncServerUrl.parse('https://streams.example.com')).toBe('https://streams.example.com')
  expect(SyncServerUrl.safeParse('ftp://127.0.0.1:4437').success).toBe(false)
  expect(SyncServerUrl.safeParse('127.0.0.1:4437').success).toBe(false)
  expect(sessionIdOf('  abc_123 ')).toBe('abc_123')
  expect(sessionIdOf('http://127.0.0.1:4173/?seed=1#/session/abc_123')).toBe('abc_123')
})
