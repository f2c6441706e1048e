/**
 * The engine's session cache never drops an entry a call still holds or a watcher listens on
 * (TanStack Query's gcTime model): only entries nobody holds or watches are forgotten, and a
 * call racing any number of calls on other sessions still lands on the live entry.
 */
import { describe, expect, test } from 'vitest'
import { isSessionlineError } from '../../src/schema/errors'
import { engineKinds } from '../support/engines'
import { changeFeed } from '../support/feed'

/** More sessions than the cache keeps while nobody watches them. */
const OTHERS = 70

describe.each(engineKinds)('session cache %s', (_, makeEngine) => {
  test(`watch racing ${OTHERS} reads of other sessions still hears the next commit`, async () => {
    const writer = await makeEngine()
    const reader = await makeEngine({ dbName: writer.dbName })
    try {
      const others: string[] = []
      for (let i = 0; i < OTHERS; i++) others.push((await writer.engine.createSession({ id: `o${i}` })).id)
      const { id } = await reader.engine.createSession({ id: 'watched' })
      await reader.engine.admit(id, { text: 'cached' })
      const feed = changeFeed()
      // Issued together: the reads of other sessions load new cache entries while watch runs.
      const [unsubscribe] = await Promise.all([
        reader.engine.watch(id, feed.listener),
        ...others.map((other) => reader.engine.pending(other)),
      ])
      try {
        await reader.engine.admit(id, { id: 'heard', text: 'after the race' })
        await feed.until((changes) => changes.some((c) => c.inputs.some((r) => r.id === 'heard')))
        // And a commit by another engine reaches it too (the cross-tab path).
        await writer.engine.admit(id, { id: 'heard-too', text: 'from the other engine' })
        await feed.until((changes) => changes.some((c) => c.inputs.some((r) => r.id === 'heard-too')))
      } finally {
        unsubscribe()
      }
    } finally {
      await reader.close()
      await writer.close()
    }
  })

  test(`every call racing ${OTHERS} calls on other sessions sees its own session's latest state`, async () => {
    const { engine, close } = await makeEngine()
    try {
      const ids: string[] = []
      for (let i = 0; i < OTHERS; i++) ids.push((await engine.createSession({ id: `s${i}` })).id)
      // Each session gets an admit and a read of its pending inputs, all issued at once.
      const results = await Promise.all(
        ids.flatMap((id) => [
          engine.admit(id, { id: `in-${id}`, text: id }),
          engine.pending(id).then((pending) => pending.length),
        ]),
      )
      expect(results.filter((r) => isSessionlineError(r))).toEqual([])
      for (const id of ids) expect((await engine.pending(id)).map((r) => r.id)).toEqual([`in-${id}`])
      for (const id of ids.slice(0, 3)) {
        expect((await engine.promote(id, 'settled')).map((r) => r.id)).toEqual([`in-${id}`])
      }
    } finally {
      await close()
    }
  })
})
