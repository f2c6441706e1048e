/**
 * `page` with `afterSeq`: the oldest rows above a seq (how a sparse window pages a gap in from
 * its lower end), bounded by `beforeSeq`, with `hasNewer` and `hasOlder` telling what lies beyond.
 */
import { describe, expect, test } from 'vitest'
import { engineKinds } from '../support/engines'
import { turnEvents } from '../support/turns'

describe.each(engineKinds)('page after a seq %s', (_, makeEngine) => {
  test('returns the oldest `limit` rows above afterSeq and below beforeSeq, and says what lies beyond', async () => {
    const { engine, close } = await makeEngine({ broadcast: false })
    try {
      const { id } = await engine.createSession()
      const events = Array.from(
        { length: 5 },
        (_, i) => turnEvents(i + 1, { prompt: `p${i + 1}`, answer: `a${i + 1}` }).events,
      ).flat()
      await engine.append(id, events)
      const all = (await engine.page(id, { limit: 100 })).messages
      expect(all).toHaveLength(10)
      const first = await engine.page(id, { afterSeq: 0, limit: 3 })
      expect(first.messages.map((m) => m.id)).toEqual(all.slice(0, 3).map((m) => m.id))
      expect(first).toMatchObject({ hasOlder: false, hasNewer: true, baseSeq: all[0]!.seq })
      const middle = await engine.page(id, { afterSeq: all[2]!.seq, beforeSeq: all[6]!.seq, limit: 10 })
      expect(middle.messages.map((m) => m.id)).toEqual(all.slice(3, 6).map((m) => m.id))
      expect(middle).toMatchObject({ hasOlder: true, hasNewer: false })
      const exact = await engine.page(id, { afterSeq: all[2]!.seq, beforeSeq: all[6]!.seq, limit: 3 })
      expect(exact.hasNewer).toBe(false)
      const tail = await engine.page(id, { afterSeq: all[9]!.seq, limit: 5 })
      expect(tail).toMatchObject({ messages: [], hasOlder: true, hasNewer: false, baseSeq: 0 })
    } finally {
      await close()
    }
  })
})
