/**
 * Two engines (two tabs) on one database, on fake-indexeddb: each search checks every session's
 * index against the session row as stored, so the engine that did not commit catches its
 * loaded index up from the rows the other committed, and drops the index of a session the other
 * deleted.
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { expect, test } from 'vitest'
import { createEngine } from '../../../src/engine/engine'
import type { SearchIndexEvent } from '../../../src/engine/search/index'
import { freshDbName } from '../../support/engines'
import { turnEvents } from '../../support/turns'

test("a second engine's search finds rows the first committed after it built its index, and no rows of a session the first deleted", async () => {
  const dbName = freshDbName('search-two-engines')
  const seen: SearchIndexEvent[] = []
  const writer = createEngine({ dbName, indexedDB, IDBKeyRange })
  const reader = createEngine({ dbName, indexedDB, IDBKeyRange, onSearchIndex: (e) => seen.push(e) })
  try {
    const { id } = await writer.createSession({ title: 'shared' })
    await writer.append(id, turnEvents(1, { prompt: 'ochre', answer: 'umber' }).events)
    expect((await reader.search('ochre')).map((h) => h.sessionId)).toEqual([id])
    const { id: other } = await writer.createSession({ title: 'other' })
    await writer.append(other, turnEvents(1, { prompt: 'teal', answer: 'ok' }).events)
    // Committed by the writer after the reader's index was built and loaded.
    await writer.append(id, turnEvents(2, { prompt: 'sepia', answer: 'ok' }).events)
    const sepia = await reader.search('sepia')
    expect(sepia.map((h) => [h.sessionId, h.turn])).toEqual([[id, 2]])
    expect((await reader.search('teal')).map((h) => h.sessionId)).toEqual([other])
    // The reader caught its loaded index up (it did not rebuild it).
    expect(seen.some((e) => e.kind === 'caught-up' && e.sessionId === id)).toBe(true)
    await writer.deleteSession(id)
    expect(await reader.search('ochre')).toEqual([])
    expect(await reader.search('sepia')).toEqual([])
  } finally {
    await reader.close()
    await writer.close()
  }
})
