/**
 * A full disk, for real: the DevTools protocol shrinks the origin's quota
 * (`Storage.overrideQuotaForOrigin`), the page writes through the demo's worker until IndexedDB
 * refuses, and the refusal must be `quota_exceeded` with nothing of the refused write stored,
 * everything acknowledged before it kept (across a reload too), and writes working again once
 * there is room.
 */
import { afterEach, describe, expect, test } from 'vitest'
import { type Browser, demoSuite, launchBrowser, waitReady } from './harness'

const { figures, url } = demoSuite()
let browser: Browser | undefined
afterEach(async () => {
  await browser?.close()
  browser = undefined
})

/** About 200 KB as IndexedDB stores it: a large input just under the input limit. */
const BIG = 95_000

describe('storage quota (Chromium)', () => {
  test('quota exhaustion rejects quota_exceeded, keeps every acknowledged write and half of none', async () => {
    browser = await launchBrowser()
    const page = browser.context.pages()[0] ?? (await browser.context.newPage())
    const origin = new URL(url()).origin
    const cdp = await browser.context.newCDPSession(page)
    // Set before the origin opens any storage: Chromium does not apply an override to a
    // connection already open. 3 MB hold the app and a dozen large inputs.
    await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: 3_000_000 })
    await page.goto(url())
    await waitReady(page)

    // (Chromium enforces the override but `navigator.storage.estimate()` keeps reporting the
    // real quota, so the test learns that the disk is "full" from the refusal itself.)

    const outcome = await page.evaluate(async (size) => {
      const client = window.__sessionline!.client
      // Chromium compresses what IndexedDB stores: only text that does not compress fills a disk.
      // (xorshift: getRandomValues gives at most 64 KB per call.)
      let seed = 0x2545f491
      const noise = (length: number) => {
        let out = ''
        for (let i = 0; i < length; i++) {
          seed ^= seed << 13
          seed ^= seed >>> 17
          seed ^= seed << 5
          out += String.fromCharCode(0x4e00 + ((seed >>> 0) % 0x5000))
        }
        return out
      }
      // No turns in the background: every write here is the test's own.
      await client.configure({ provider: { kind: 'none' } })
      const { id } = await client.createSession({ title: 'quota' })
      const accepted: string[] = []
      let refusal: { code?: string; message?: string } | undefined
      for (let i = 0; i < 200 && !refusal; i++) {
        try {
          const receipt = await client.admit(id, { id: `big-${i}`, text: `${i} ${noise(size)}` })
          accepted.push(receipt.id)
        } catch (error) {
          refusal = { code: (error as { code?: string }).code, message: (error as Error).message }
        }
      }
      const pending = (await client.pending(id)).map((r) => r.id)
      const session = await client.getSession(id)
      // A log write refused the same way: its events and rows must be all or nothing.
      const headBefore = session?.headSeq ?? 0
      const appended = await client
        .append(id, [
          { type: 'turn/start', data: { turn: 1 } },
          { type: 'step/start', data: { turn: 1, step: 1 } },
          { type: 'assistant/start', data: { messageId: 'answer', turn: 1, step: 1 } },
          ...Array.from({ length: 4 }, () => ({
            type: 'assistant/delta' as const,
            data: { messageId: 'answer', text: noise(900_000) },
          })),
        ])
        .then(
          () => 'accepted',
          (error: { code?: string }) => error.code,
        )
      const after = await client.getSession(id)
      const events = await client.events(id)
      return {
        id,
        accepted,
        refusal,
        pending,
        nextInputSeq: session?.nextInputSeq,
        appended,
        headBefore,
        headAfter: after?.headSeq,
        eventCount: events.length,
      }
    }, BIG)

    figures['quota: inputs acknowledged before the quota ran out'] = String(outcome.accepted.length)
    expect(outcome.refusal?.code, outcome.refusal?.message).toBe('quota_exceeded')
    expect(outcome.accepted.length).toBeGreaterThan(0)
    // Every acknowledged input is there, and the refused one is not, not even in part.
    expect(outcome.pending).toEqual(outcome.accepted)
    expect(outcome.nextInputSeq).toBe(outcome.accepted.length + 1)
    expect(outcome.appended).toBe('quota_exceeded')
    expect(outcome.headAfter).toBe(outcome.headBefore)
    expect(outcome.eventCount).toBe(outcome.headBefore)

    // Room again: writes go on, and what was acknowledged survives a reload.
    await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: 1_000_000_000 })
    await page.reload()
    await waitReady(page)
    const later = await page.evaluate(async (id) => {
      const client = window.__sessionline!.client
      await client.configure({ provider: { kind: 'none' } })
      const receipt = await client.admit(id, { id: 'after-room', text: 'there is room again' })
      return { status: receipt.status, pending: (await client.pending(id)).map((r) => r.id) }
    }, outcome.id)
    expect(later.status).toBe('pending')
    expect(later.pending).toEqual([...outcome.accepted, 'after-room'])
    expect(browser.errors).toEqual([])
  })
})
