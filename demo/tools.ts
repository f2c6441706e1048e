/**
 * The playground's tools: the library's demo tools, and `read_note`, which a person approves
 * before every call, so the approval card (and its wait surviving a reload) can be tried with
 * any model that calls tools.
 */
import { z } from 'zod'
import type { Tool, Tools } from '../src/engine/provider'
import { createDemoTools } from '../src/engine/tools'
import { parseOrThrow } from '../src/schema/errors'

/** The tool that waits for a person's approval. */
export const APPROVED_TOOL = 'read_note'

const ReadNoteInput = z.strictObject({ title: z.string().min(1).max(200) })

/** `clock`, `calculator`, `search_notes`, and `read_note` (needs approval). */
export function playgroundTools(): Tools {
  const demo = createDemoTools()
  const searchNotes = demo.search_notes!
  const readNote: Tool = {
    description: 'Reads the playground note with the given title (asks the person first).',
    parameters: {
      type: 'object',
      properties: { title: { type: 'string', description: 'e.g. "Inbox"' } },
      required: ['title'],
      additionalProperties: false,
    },
    needsApproval: true,
    // Harmless on purpose: the note is one of the search tool's, found by its title.
    async run(input, context) {
      const { title } = parseOrThrow(ReadNoteInput, input, 'read_note input')
      return searchNotes.run({ query: title }, context)
    },
  }
  return { ...demo, [APPROVED_TOOL]: readNote }
}
