/**
 * The bench's stand-in model server (test/bench/main-thread.mjs): the playground's
 * OpenAI-compatible provider reads it as it reads a real one, so its stream must hold the whole
 * answer in order, end with `[DONE]`, and the server must stop serving once its time is up.
 */
import { describe, expect, it } from 'vitest'
import { markdownAnswer, startSseServer } from '../bench/main-thread.mjs'

type Server = Awaited<ReturnType<typeof startSseServer>>

async function ask(server: Server): Promise<Response> {
  return fetch(`${server.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'bench', stream: true, messages: [{ role: 'user', content: 'go' }] }),
  })
}

describe('main-thread SSE server', () => {
  it('the answer has every block kind and the requested size', () => {
    const text = markdownAnswer(200_000)
    expect(text.length).toBe(200_000)
    for (const mark of ['\n## Section', '\n- item', '\n  - nested', '\n```ts\n', '\n| ---- |'])
      expect(text).toContain(mark)
    expect(markdownAnswer(5_000)).toBe(text.slice(0, 5_000))
  })

  it('streams the answer whole as chat completion chunks at its rate, then refuses once its time is up', async () => {
    const text = markdownAnswer(3_000)
    const server = await startSseServer({ text, charsPerSecond: 20_000, tickMs: 10, limitMs: 400 })
    try {
      const t0 = Date.now()
      const response = await ask(server)
      expect(response.headers.get('content-type')).toBe('text/event-stream')
      expect(response.headers.get('access-control-allow-origin')).toBe('*')
      const body = await response.text()
      // 3,000 characters at 20,000/s: 150 ms at least (15 ticks of 200 characters).
      expect(Date.now() - t0).toBeGreaterThanOrEqual(140)
      const events = body
        .split('\n\n')
        .filter(Boolean)
        .map((e) => e.replace(/^data: /, ''))
      expect(events.at(-1)).toBe('[DONE]')
      const chunks = events.slice(0, -1).map((e) => JSON.parse(e))
      expect(chunks.map((c) => c.choices[0].delta.content ?? '').join('')).toBe(text)
      expect(chunks.at(-1).choices[0].finish_reason).toBe('stop')
      await new Promise((r) => setTimeout(r, 450))
      expect((await ask(server)).status).toBe(503)
    } finally {
      await server.close()
    }
  })
})
