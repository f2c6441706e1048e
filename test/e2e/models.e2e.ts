import type { Page } from 'playwright-core'
import { describe, expect, test } from 'vitest'
import { type ChatReply, type ChatRequest, startChatServer } from './chat-server'
import { demoSuite, newSession, noticeText, send, waitReady } from './harness'

const { start } = demoSuite()

const lastAssistant = '.transcript__rows > .row[data-role="assistant"]:last-child'
const waitingCard = '.tool-card[data-state="awaiting-approval"]'

/**
 * A model that calls `read_note` when asked about a note, answers from the tool's result once
 * it is in the messages (or says it was refused), and otherwise says hello.
 */
function noteReader() {
  let calls = 0
  return (request: ChatRequest): ChatReply => {
    const last = request.body.messages?.at(-1)
    if (last?.role === 'tool') {
      const result = String(last.content)
      return result.includes('"error"')
        ? { words: ['I did not ', 'read the note.'] }
        : { words: ['The note ', 'was read: ', result.includes('durable receipt') ? 'receipts.' : '?'] }
    }
    if (JSON.stringify(last).includes('note')) {
      calls += 1
      return { toolCall: { id: `call_${calls}`, name: 'read_note', arguments: '{"title":"Inbox"}' } }
    }
    return { words: ['Hello ', 'from an ', 'AI SDK model.'] }
  }
}

/** Settings → "AI SDK model" on `baseUrl` with a key, saved. */
async function chooseAiSdkModel(page: Page, baseUrl: string): Promise<void> {
  await page.click('#open-settings')
  await page.check('#kind-ai-sdk')
  await page.fill('input[name="aiBaseUrl"]', baseUrl)
  await page.fill('input[name="aiModel"]', 'tiny-ai-sdk-model')
  await page.fill('input[name="aiApiKey"]', 'sk-local-test')
  await page.click('.settings button[type="submit"]')
  await page.waitForSelector('#settings', { state: 'hidden' })
}

/** The state of the newest tool card, once it is `state`. */
async function waitForToolState(page: Page, state: string): Promise<void> {
  await page.waitForSelector(`.tool-card[data-state="${state}"]`, { timeout: 15_000 })
}

describe('playground: an AI SDK model (fromLanguageModel) and tool approvals', () => {
  test('streams an answer; a call that needs approval waits across a reload, then runs once approved', async () => {
    const model = await startChatServer(noteReader())
    try {
      const { page } = await start()
      await newSession(page)
      await chooseAiSdkModel(page, `${model.url}v1`)
      expect(await page.textContent('#provider-label')).toContain('tiny-ai-sdk-model · AI SDK')

      await send(page, 'Say hello')
      await page.waitForSelector(`${lastAssistant}[data-state="complete"]`, { timeout: 15_000 })
      expect(await page.textContent(`${lastAssistant} .part--text`)).toBe('Hello from an AI SDK model.')
      const first = model.requests[0]!
      expect(first.authorization).toBe('Bearer sk-local-test')
      expect(first.body).toMatchObject({ model: 'tiny-ai-sdk-model', stream: true })
      expect(JSON.stringify(first.body.messages)).toContain('Say hello')

      await send(page, 'Read the Inbox note')
      await page.waitForSelector(`${waitingCard} .tool-card__approval:not([hidden])`, { timeout: 15_000 })
      expect(await page.textContent(`${waitingCard} .tool-card__name`)).toBe('read_note')
      const asked = model.requests.length

      // The wait is in the log: a new page (and a new worker) shows the same card, still waiting.
      await page.reload()
      await waitReady(page)
      await page.waitForSelector(`${waitingCard} .tool-card__approval:not([hidden])`, { timeout: 15_000 })
      expect(model.requests.length).toBe(asked)

      await page.click(`${waitingCard} button:text-is("Approve")`)
      await waitForToolState(page, 'done')
      await page.waitForSelector(`${lastAssistant}[data-state="complete"]:has-text("The note was read")`, {
        timeout: 15_000,
      })
      expect(await page.textContent(`${lastAssistant} .part--text`)).toBe('The note was read: receipts.')
      // The model was asked once more, with the tool's result, by the worker the reload started.
      expect(model.requests.length).toBe(asked + 1)
      const answered = model.requests.at(-1)!
      expect(answered.authorization).toBe('Bearer sk-local-test')
      expect(answered.body.messages?.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_1' })
      // The key is a setting of this origin, never part of the session's log.
      const log = await page.evaluate(async () => {
        const { client, sessionId } = window.__sessionline!
        return JSON.stringify(await client.events(sessionId!))
      })
      expect(log).toContain('read_note')
      expect(log).not.toContain('sk-local-test')
      expect(await noticeText(page)).toBe('')
    } finally {
      await model.close()
    }
  })

  test('a denied call is not run: the card says denied and the model is told', async () => {
    const model = await startChatServer(noteReader())
    try {
      const { page } = await start()
      await newSession(page)
      await chooseAiSdkModel(page, `${model.url}v1`)
      await send(page, 'Read the Inbox note')
      await page.waitForSelector(`${waitingCard} .tool-card__approval:not([hidden])`, { timeout: 15_000 })
      await page.click(`${waitingCard} button:text-is("Deny")`)
      await waitForToolState(page, 'denied')
      await page.waitForSelector(`${lastAssistant}[data-state="complete"]:has-text("I did not")`, {
        timeout: 15_000,
      })
      expect(await page.textContent(`${lastAssistant} .part--text`)).toBe('I did not read the note.')
      const told = model.requests.at(-1)!.body.messages?.at(-1)
      expect(told).toMatchObject({ role: 'tool', tool_call_id: 'call_1' })
      // Not run: the result the model got is the refusal, not the note.
      expect(String(told?.content)).not.toContain('durable receipt')
      expect(await page.textContent('.tool-card[data-state="denied"] .tool-card__state')).toBe('denied')
      expect(await noticeText(page)).toBe('')
    } finally {
      await model.close()
    }
  })
})
