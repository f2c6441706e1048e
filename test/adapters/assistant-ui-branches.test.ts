/**
 * The runtime's branch store (src/assistant-ui/branches.ts) on its own: siblings stand beside a
 * row in the order the view names them, a new newest sibling needs no question, and a list the
 * view cannot read leaves the row alone instead of holding the thread back.
 */
import { describe, expect, test } from 'vitest'
import { SiblingLists } from '../../src/assistant-ui/branches'
import type { ChatRow } from '../../src/client/activity'
import { SessionlineError } from '../../src/schema/errors'
import type { SessionMessage } from '../../src/schema/messages'

const row = (
  id: string,
  role: 'user' | 'assistant',
  seq: number,
  branch?: SessionMessage['branch'],
): ChatRow => ({
  key: id,
  kind: 'message',
  message: {
    id,
    sessionId: 's',
    seq,
    turn: 1,
    role,
    parts: [{ type: 'text', text: id }],
    status: 'complete',
    visibility: 'visible',
    createdAt: seq,
    updatedAt: seq,
    ...(branch ? { branch } : {}),
  },
})

const shape = (repository: ReturnType<SiblingLists['repository']>) =>
  repository && {
    headId: repository.headId,
    messages: repository.messages.map((m) => [m.message.id, m.parentId, m.message.role]),
  }

describe('the branch store of the assistant-ui runtime', () => {
  test("siblings stand beside the row in the view's order; a new newest sibling is learnt without asking", async () => {
    const asked: string[] = []
    let changed = 0
    const lists = new SiblingLists(
      {
        branches: async (id) => {
          asked.push(id)
          return { ids: ['a0', 'a1', 'a2'] }
        },
      },
      () => changed++,
      (error) => {
        throw error
      },
    )
    const path = [row('u', 'user', 1), row('a1', 'assistant', 3, { index: 1, count: 3 })]
    expect(lists.repository(path)).toBeUndefined() // asking: nothing built yet
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect([asked, changed]).toEqual([['a1'], 1])
    expect(shape(lists.repository(path))).toEqual({
      headId: 'a1',
      messages: [
        ['u', null, 'user'],
        ['a0', 'u', 'assistant'],
        ['a1', 'u', 'assistant'],
        ['a2', 'u', 'assistant'],
      ],
    })
    // A reload makes a fourth answer: the rows seen under u, then it; no question.
    const next = [path[0]!, row('a3', 'assistant', 9, { index: 3, count: 4 })]
    expect(shape(lists.repository(next))?.messages.map((m) => m[0])).toEqual(['u', 'a0', 'a1', 'a2', 'a3'])
    expect(asked).toEqual(['a1'])
  })

  test('a list the view cannot read is reported once and the row stands alone', async () => {
    const errors: unknown[] = []
    let changed = 0
    const lists = new SiblingLists(
      { branches: () => Promise.reject(new SessionlineError('storage_unavailable', 'gone')) },
      () => changed++,
      (error) => errors.push(error),
    )
    const path = [row('u', 'user', 1), row('a1', 'assistant', 3, { index: 1, count: 2 })]
    expect(lists.repository(path)).toBeUndefined()
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect([errors.length, changed]).toEqual([1, 1])
    expect(shape(lists.repository(path))?.messages.map((m) => m[0])).toEqual(['u', 'a1'])
    expect(errors).toHaveLength(1)
  })
})
