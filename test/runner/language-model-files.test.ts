/**
 * fromLanguageModel sends a prompt's attachments as the specifications' `file` parts: the bytes
 * the engine stored for the input, read back when the step starts, with the media type and the
 * file's name. Driven through a real engine on fake-indexeddb and the `ai` package's own mocks.
 */
import { describe, expect, test } from 'vitest'
import { fromLanguageModel } from '../../worker/index'
import { allRows, startEngine, untilTurnsEnded } from './harness'
import { finish, mockModel, partStream, SPEC_VERSIONS, text } from './language-model-fixtures'

/** A 1×1 PNG's first bytes are enough: the provider is handed bytes, it does not decode them. */
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3])

type UserMessage = { role: string; content: { type: string; [key: string]: unknown }[] }

describe('fromLanguageModel with attachments', () => {
  test.each(SPEC_VERSIONS)(
    "%s: an admitted image reaches the model as a file part with the input's text",
    async (version) => {
      const mock = mockModel(version, () =>
        partStream(
          version,
          [...text('t', 'A small image.'), finish('stop', { input: 5, output: 3 })],
          'close',
        ),
      )
      const { engine, sessionId, close } = await startEngine({ provider: fromLanguageModel(mock.model) })
      try {
        await engine.admit(sessionId, {
          text: 'What is this?',
          attachments: [
            { name: 'dot.png', mediaType: 'image/png', data: new Blob([PNG], { type: 'image/png' }) },
          ],
        })
        await untilTurnsEnded(engine, sessionId, 1)
        const [call] = mock.calls() as { prompt: UserMessage[] }[]
        const user = call!.prompt.filter((m) => m.role === 'user')
        expect(user).toHaveLength(1)
        const [textPart, filePart] = user[0]!.content
        expect(textPart).toEqual({ type: 'text', text: 'What is this?' })
        expect(filePart).toMatchObject({ type: 'file', mediaType: 'image/png', filename: 'dot.png' })
        expect([...(filePart!.data as Uint8Array)]).toEqual([...PNG])
        const rows = await allRows(engine, sessionId)
        expect(rows.find((r) => r.role === 'assistant')?.parts).toEqual([
          { type: 'text', text: 'A small image.' },
        ])
      } finally {
        await close()
      }
    },
  )

  test('an input that is only a file sends the file part alone', async () => {
    const mock = mockModel('v4', () => partStream('v4', [...text('t', 'ok'), finish('stop')], 'close'))
    const { engine, sessionId, close } = await startEngine({ provider: fromLanguageModel(mock.model) })
    try {
      const receipt = await engine.admit(sessionId, {
        text: '',
        attachments: [
          { name: 'notes.txt', mediaType: 'text/plain', data: new TextEncoder().encode('hi').buffer },
        ],
      })
      expect(receipt.attachments?.map((f) => f.name)).toEqual(['notes.txt'])
      await untilTurnsEnded(engine, sessionId, 1)
      const [call] = mock.calls() as { prompt: UserMessage[] }[]
      const user = call!.prompt.find((m) => m.role === 'user')!
      // No text part for an input that is only a file.
      expect(user.content.map((p) => p.type)).toEqual(['file'])
      expect(new TextDecoder().decode(user.content[0]!.data as Uint8Array)).toBe('hi')
    } finally {
      await close()
    }
  })
})
