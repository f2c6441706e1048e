// @vitest-environment happy-dom
/**
 * The playground's approval card on a tool row: shown while the call waits for a person, its
 * three buttons answer through the row's actions with the call's id, and it goes away when the
 * call is answered.
 */
import { describe, expect, test } from 'vitest'
import { RowView } from '../../demo/ui/row'
import type { ApprovalAnswer, SessionMessage, ToolPart } from '../../src/index'

function toolRow(state: ToolPart['state']): { key: string; kind: 'message'; message: SessionMessage } {
  const message: SessionMessage = {
    id: 'm1',
    sessionId: 's',
    seq: 5,
    role: 'assistant',
    turn: 1,
    step: 1,
    parts: [{ type: 'tool', callId: 'call_7', name: 'deploy', input: { target: 'prod' }, state }],
    status: 'complete',
    visibility: 'visible',
    createdAt: 0,
    updatedAt: 0,
  }
  return { key: 'm1', kind: 'message', message }
}

describe('approval card', () => {
  test('shown while the call waits; each button answers with the call id; hidden once answered', () => {
    const answers: [string, ApprovalAnswer][] = []
    const row = new RowView('m1', {
      retry: () => {},
      loadGap: () => {},
      turnsIn: () => 0,
      respond: (callId, answer) => answers.push([callId, answer]),
    })
    row.update(toolRow('awaiting-approval'))
    const group = row.node.querySelector<HTMLElement>('.tool-card__approval')!
    expect(group.hidden).toBe(false)
    const buttons = [...group.querySelectorAll('button')]
    expect(buttons.map((b) => [b.textContent, b.type])).toEqual([
      ['Approve', 'button'],
      ['Deny', 'button'],
      ['Always', 'button'],
    ])
    for (const button of buttons) button.click()
    expect(answers).toEqual([
      ['call_7', { approved: true }],
      ['call_7', { approved: false }],
      ['call_7', { approved: true, remember: 'always' }],
    ])
    row.update(toolRow('running'))
    expect(group.hidden).toBe(true)
    row.update(toolRow('denied'))
    expect(row.node.querySelector('.tool-card')!.getAttribute('data-state')).toBe('denied')
    expect(group.hidden).toBe(true)
  })
})
