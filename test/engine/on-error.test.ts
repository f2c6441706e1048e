/**
 * `createEngine({ onError })` is the one hook for failures no call awaits: a turn the built-in
 * runner ended in error, and background work (here a search index write) that failed. Through
 * the public API, on fake-indexeddb; the failures are real (a provider that throws, a database
 * deleted from another connection).
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { expect, test, vi } from 'vitest'
import { createEngine } from '../../src/engine/engine'
import type { ModelProvider } from '../../src/engine/provider'
import type { SessionlineError } from '../../src/schema/errors'
import { freshDbName } from '../support/engines'
import { turnEvents } from '../support/turns'

type Told = [error: SessionlineError, sessionId: string | undefined]

test("a provider failure that ends a turn reaches the engine's onError with its session, not the console", async () => {
  const failing: ModelProvider = async function* () {
    yield { type: 'text', text: 'partial ' }
    throw new Error('model server fell over')
  }
  const told: Told[] = []
  const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
  const engine = createEngine({
    dbName: freshDbName('on-error-runner'),
    indexedDB,
    IDBKeyRange,
    broadcast: false,
    provider: failing,
    onError: (error, sessionId) => told.push([error, sessionId]),
  })
  try {
    const { id } = await engine.createSession({ title: 'fails' })
    await engine.admit(id, { text: 'go' })
    await vi.waitFor(() => expect(told).toHaveLength(1), { timeout: 5000 })
    expect(told[0]![1]).toBe(id)
    expect(told[0]![0].message).toMatch(/model server fell over/)
    expect(warn).not.toHaveBeenCalled()
  } finally {
    warn.mockRestore()
    await engine.close()
  }
})

test("a search index write that fails in the background reaches the engine's onError as a typed error", async () => {
  const dbName = freshDbName('on-error-search')
  const told: Told[] = []
  const engine = createEngine({
    dbName,
    indexedDB,
    IDBKeyRange,
    broadcast: false,
    onError: (error, sessionId) => told.push([error, sessionId]),
  })
  const { id } = await engine.createSession({ title: 'indexed' })
  await engine.append(id, turnEvents(1, { prompt: 'amaranth', answer: 'ok' }).events)
  // The search builds the index and schedules its write a PERSIST_DELAY later.
  expect(await engine.search('amaranth')).toHaveLength(1)
  // Site data cleared meanwhile: the engine lets go of the database, and the write fails.
  await new Promise<void>((resolve, reject) => {
    const request = indexedDB.deleteDatabase(dbName)
    request.onsuccess = () => resolve()
    request.onerror = () => reject(request.error)
  })
  await vi.waitFor(() => expect(told.some(([, sessionId]) => sessionId === id)).toBe(true), { timeout: 5000 })
  const [error] = told.find(([, sessionId]) => sessionId === id)!
  expect(error.code).toBe('storage_unavailable')
  expect(error.message).toMatch(/search index/)
  await engine.close().catch(() => undefined)
})
