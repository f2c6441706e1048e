/**
 * Sparse windows through a real Comlink connection: jumpTo loads a neighbourhood with a gap to
 * the tail, gaps page in from either end and segments that meet merge, the rail marks the
 * jumped-to turn loaded, and loadThrough still loads contiguously through a gap.
 */
import { afterEach, expect, test } from 'vitest'
import type { TimelineSnapshot } from '../../src/client/types'
import { openPage, type Page, seedTurns, until } from './harness'

let page: Page | undefined
afterEach(async () => {
  await page?.close()
  page = undefined
})

const gapsOf = (s: TimelineSnapshot) => s.rows.filter((r) => r.kind === 'gap')
const messageSeqs = (s: TimelineSnapshot) =>
  s.rows.flatMap((r) => (r.kind === 'message' ? [r.message.seq] : []))

async function seeded(turns: number, tail = 50) {
  page = await openPage()
  const { id } = await page.engine.createSession()
  await seedTurns(page.engine, id, turns)
  const view = page.client.open(id, { tail })
  await until(view, (s) => s.status === 'ready')
  // The whole outline, for seqs to jump to (a fresh view holds only its newest slice).
  const outline = await page.engine.projection(id, 'turnOutline')
  return { view, outline, id }
}

test('jumpTo turn 1 of a 1,000-turn session loads its neighbourhood and leaves one gap to the tail', async () => {
  const { view, outline } = await seeded(1000)
  const turn1 = outline[0]!
  await view.jumpTo(turn1.seq)
  const s = view.getSnapshot()
  const gaps = gapsOf(s)
  expect(gaps).toHaveLength(1)
  // The turn (2 rows) and a page after it, a gap, the tail page: not the 2,000 rows between.
  expect(s.rows.length).toBeLessThanOrEqual(50 + 2 + 50 + 1)
  expect(s.rows[0]).toMatchObject({ kind: 'message', message: { id: 'u-1' } })
  expect(s.hasOlder).toBe(false)
  expect(s.baseSeq).toBe(s.rows[0]!.kind === 'message' ? s.rows[0].message.seq : -1)
  const at = s.rows.indexOf(gaps[0]!)
  const below = s.rows[at - 1]!
  const above = s.rows[at + 1]!
  expect(at).toBeLessThanOrEqual(52)
  expect(below.kind === 'message' && gaps[0]!.fromSeq > below.message.seq).toBe(true)
  expect(above.kind === 'message' && gaps[0]!.toSeq < above.message.seq).toBe(true)
  expect(s.rows.length - at - 1).toBe(50) // the tail page
  // The rail marks turn 1 loaded, with the key of its first row, and keeps the outline's turns.
  expect(s.rail[0]).toMatchObject({ kind: 'loaded', turn: 1, key: 'u-1', seq: turn1.seq })
  expect(s.rail).toHaveLength(1000)
  expect(s.rail.filter((item) => item.kind === 'loaded').length).toBeLessThanOrEqual(51)
})

test('a gap pages in from either end, and the segments merge when they meet', async () => {
  const { view, outline } = await seeded(60, 10)
  await view.jumpTo(outline[0]!.seq)
  let gap = gapsOf(view.getSnapshot())[0]!
  const { fromSeq, toSeq } = gap
  await view.loadGap(gap.key, 'older')
  gap = gapsOf(view.getSnapshot())[0]!
  expect(gap.fromSeq).toBe(fromSeq)
  expect(gap.toSeq).toBeLessThan(toSeq)
  await view.loadGap(gap.key, 'newer')
  const after = gapsOf(view.getSnapshot())[0]!
  expect(after.fromSeq).toBeGreaterThan(fromSeq)
  for (let i = 0; i < 20 && gapsOf(view.getSnapshot()).length > 0; i++) {
    await view.loadGap(gapsOf(view.getSnapshot())[0]!.key, i % 2 === 0 ? 'older' : 'newer')
  }
  const s = view.getSnapshot()
  expect(gapsOf(s)).toEqual([])
  expect(s.rows.map((r) => r.key)).toEqual(
    Array.from({ length: 60 }, (_, i) => [`u-${i + 1}`, `a-${i + 1}`]).flat(),
  )
  // An unknown key is no error: the gap may have merged away meanwhile.
  await expect(view.loadGap('gap:none', 'older')).resolves.toBeUndefined()
})

test('loadThrough a seq inside a gap loads through it, keeping the segment below', async () => {
  const { view, outline } = await seeded(300, 20)
  await view.jumpTo(outline[0]!.seq)
  const target = outline[200]!.seq
  await view.loadThrough(target)
  const s = view.getSnapshot()
  const seqs = messageSeqs(s)
  expect(seqs.some((seq) => seq >= target && seq < outline[201]!.seq)).toBe(true)
  expect(s.rows[0]).toMatchObject({ kind: 'message', message: { id: 'u-1' } })
  // Still a gap between the jumped-to start and the rows paged in from the tail.
  expect(gapsOf(s)).toHaveLength(1)
  expect(gapsOf(s)[0]!.toSeq).toBeLessThan(target)
})

test('jumpTo a loaded seq changes nothing, and a live row still lands after the tail with a gap open', async () => {
  const { view, outline, id } = await seeded(400)
  const before = view.getSnapshot()
  await view.jumpTo(
    before.rows.at(-1)!.kind === 'message'
      ? (before.rows.at(-1) as { message: { seq: number } }).message.seq
      : 1,
  )
  expect(view.getSnapshot()).toBe(before)
  await view.jumpTo(outline[3]!.seq)
  expect(gapsOf(view.getSnapshot())).toHaveLength(1)
  await view.admit('a steer', { id: 'steer-1' })
  await page!.engine.promote(id, 'settled')
  const s = await until(
    view,
    (snap) => snap.rows.at(-1)?.key === 'steer-1' && snap.rows.at(-1)?.kind === 'message',
  )
  expect(s.rows.filter((r) => r.key === 'steer-1')).toHaveLength(1)
  expect(gapsOf(s)).toHaveLength(1)
})
