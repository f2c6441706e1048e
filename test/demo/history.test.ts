// @vitest-environment happy-dom
/**
 * The playground's history controls over a real engine (fake-indexeddb): the branch picker's
 * siblings come from the session's own log, a summary's expansion lists the rows it replaced, a
 * prompt's editor resends, and the queue tray's moves and drops reorder the engine's inbox.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, test } from 'vitest'
import { replacedBy, siblingOf } from '../../demo/history/tree'
import { type HistoryActions, HistoryControls } from '../../demo/ui/history-controls'
import { QueueTray } from '../../demo/ui/queue-tray'
import { RowView } from '../../demo/ui/row'
import type { Engine } from '../../src/engine/types'
import type { SessionMessage, TimelineInput } from '../../src/index'
import { openPage, ready, until } from '../client/harness'
import { inProcessEngine } from '../support/engines'

/** A prompt admitted, promoted and answered by the host (no provider runs here). */
async function exchange(engine: Engine, sessionId: string, id: string, text: string, reply: string) {
  await engine.admit(sessionId, { id, text, delivery: 'queue' })
  const [row] = await engine.promote(sessionId, 'settled')
  const turn = row!.turn
  await engine.append(sessionId, [
    { type: 'step/start', data: { turn, step: 1 } },
    { type: 'assistant/start', data: { messageId: `${id}-answer`, turn, step: 1 } },
    { type: 'assistant/delta', data: { messageId: `${id}-answer`, text: reply } },
    {
      type: 'assistant/end',
      data: { messageId: `${id}-answer`, finish: 'stop', usage: { input: 1, output: 1 } },
    },
    { type: 'step/end', data: { turn, step: 1, usage: { input: 1, output: 1 } } },
    { type: 'turn/end', data: { turn, reason: 'completed' } },
  ])
}

const rowsOf = async (engine: Engine, sessionId: string) =>
  (await engine.page(sessionId, { limit: 1000, includeInactive: true })).messages

describe('history reads of the playground', () => {
  test('the picker steps through the siblings of a prompt in creation order, and stops at the ends', async () => {
    const { engine, close } = await inProcessEngine()
    try {
      await engine.createSession({ id: 's' })
      await exchange(engine, 's', 'u0', 'before', 'zero') // the siblings' parent
      await exchange(engine, 's', 'a', 'first', 'one')
      await engine.resend('s', 'a', { text: 'second', id: 'b' })
      await engine.resend('s', 'b', { text: 'third', id: 'c' }) // ends b's turn, opens turn 4
      await engine.append('s', [{ type: 'turn/end', data: { turn: 4, reason: 'completed' } }])
      const byId = new Map((await rowsOf(engine, 's')).map((row) => [row.id, row]))
      expect(['a', 'b', 'c'].map((id) => byId.get(id)?.branch)).toEqual([
        { index: 0, count: 3 },
        { index: 1, count: 3 },
        { index: 2, count: 3 },
      ])
      // Another branch point with the same count must not be taken for these siblings.
      await exchange(engine, 's', 'x', 'after', 'ex')
      await engine.regenerate('s', 'x-answer')
      expect(await siblingOf(engine, 's', 'c', -1)).toBe('b')
      expect(await siblingOf(engine, 's', 'b', -1)).toBe('a')
      expect(await siblingOf(engine, 's', 'a', 1)).toBe('b')
      expect(await siblingOf(engine, 's', 'a', -1)).toBeUndefined()
      expect(await siblingOf(engine, 's', 'c', 1)).toBeUndefined()
      // Switching to the sibling the picker found shows that branch.
      await engine.switchBranch('s', 'a')
      const shown = (await engine.page('s', { limit: 1000 })).messages.map((row) => row.id)
      expect(shown).toEqual(['u0', 'u0-answer', 'a', 'a-answer'])
    } finally {
      await close()
    }
  })

  test("the picker's arrows work on an imported Pi tree, which has no log to replay", async () => {
    const { engine, close } = await inProcessEngine()
    try {
      const text = readFileSync(
        path.resolve('test/import/fixtures/pi/tree-v3-branch-compaction.jsonl'),
        'utf8',
      )
      const { id } = await engine.importTranscript({ text })
      // By hand from the file: d1's answers are d2 (the leaf's, 1 / 2) and e1 (2 / 2).
      const d2 = (await rowsOf(engine, id)).find((row) => row.id === 'pi:fx-tree-v3/d2')
      expect(d2?.branch).toEqual({ index: 0, count: 2 })
      expect(await siblingOf(engine, id, 'pi:fx-tree-v3/d2', 1)).toBe('pi:fx-tree-v3/e1')
      expect(await siblingOf(engine, id, 'pi:fx-tree-v3/d2', -1)).toBeUndefined()
      await engine.switchBranch(id, 'pi:fx-tree-v3/e1')
      const shown = (await engine.page(id, { limit: 1000 })).messages.map((row) => row.id)
      expect(shown.at(-1)).toBe('pi:fx-tree-v3/e1')
      expect(await siblingOf(engine, id, 'pi:fx-tree-v3/e1', -1)).toBe('pi:fx-tree-v3/d2')
    } finally {
      await close()
    }
  })

  test("a summary's expansion lists the path it replaced, not the abandoned branches", async () => {
    const { engine, close } = await inProcessEngine()
    try {
      await engine.createSession({ id: 's' })
      await exchange(engine, 's', 'u1', 'first', 'one')
      await exchange(engine, 's', 'u2', 'second', 'two')
      await engine.rewind('s', 'u2') // u2 and its answer: off the path
      await exchange(engine, 's', 'u3', 'third', 'three')
      const summary = await engine.compact('s', { summary: 'We talked', id: 'sum' })
      expect(summary.role).toBe('summary')
      const replaced = await replacedBy(engine, 's', 'sum')
      expect(replaced.map((row) => row.id)).toEqual(['u1', 'u1-answer', 'u3', 'u3-answer'])
      expect(replaced.every((row) => row.visibility === 'inactive')).toBe(true)
      // A fork starts with a summary that replaced nothing.
      const fork = await engine.fork('s')
      const forkSummary = (await rowsOf(engine, fork.id)).find((row) => row.role === 'summary')!
      expect(await replacedBy(engine, fork.id, forkSummary.id)).toEqual([])
    } finally {
      await close()
    }
  })
})

function recorder(editable = true) {
  const calls: unknown[][] = []
  const actions: HistoryActions = {
    editable: () => editable,
    resend: (...args) => calls.push(['resend', ...args]),
    regenerate: (...args) => calls.push(['regenerate', ...args]),
    rewind: (...args) => calls.push(['rewind', ...args]),
    switchBranch: (...args) => calls.push(['switchBranch', ...args]),
    replaced: async () => [],
  }
  return { calls, actions }
}

const userRow = (extra: Partial<SessionMessage> = {}): SessionMessage =>
  ({
    id: 'p',
    sessionId: 's',
    seq: 3,
    turn: 2,
    role: 'user',
    status: 'complete',
    parts: [{ type: 'text', text: 'the prompt' }],
    createdAt: 1,
    updatedAt: 1,
    ...extra,
  }) as SessionMessage

const buttons = (root: HTMLElement) =>
  [...root.querySelectorAll('button')].map((b) => `${b.textContent}${b.disabled ? ' (off)' : ''}`)

describe('history controls of a row', () => {
  test('a prompt with siblings shows the picker, Edit and Rewind; the arrows step and stop at the ends', () => {
    const { calls, actions } = recorder()
    const body = document.createElement('div')
    document.body.append(body)
    const controls = new HistoryControls(actions, body)
    body.before(controls.node)
    controls.update(userRow({ branch: { index: 1, count: 3 } }))
    expect(controls.node.querySelector('.branch-picker__label')?.textContent).toBe('2 / 3')
    expect(buttons(controls.node)).toEqual(['‹', '›', 'Edit', 'Rewind'])
    for (const b of controls.node.querySelectorAll('button')) b.click()
    expect(calls).toEqual([
      ['switchBranch', 'p', -1],
      ['switchBranch', 'p', 1],
      ['rewind', 'p'],
    ])
    controls.update(userRow({ branch: { index: 2, count: 3 } }))
    expect(buttons(controls.node)).toEqual(['‹', '› (off)', 'Edit', 'Rewind'])
  })

  test('Edit swaps the text for an editor: Escape keeps the prompt, Enter resends the edited text', () => {
    const { calls, actions } = recorder()
    const body = document.createElement('div')
    document.body.append(body)
    const controls = new HistoryControls(actions, body)
    controls.update(userRow())
    const edit = () => [...controls.node.querySelectorAll('button')].find((b) => b.textContent === 'Edit')!
    edit().click()
    let editor = document.querySelector<HTMLTextAreaElement>('.row__editor')!
    expect([editor.value, body.hidden, controls.editing]).toEqual(['the prompt', true, true])
    editor.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }))
    expect([document.querySelector('.row__editor'), body.hidden, calls]).toEqual([null, false, []])
    edit().click()
    editor = document.querySelector<HTMLTextAreaElement>('.row__editor')!
    editor.value = 'the prompt, edited'
    editor.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }))
    expect(calls).toEqual([['resend', 'p', 'the prompt, edited']])
    expect(document.querySelector('.row__editor')).toBeNull()
  })

  test('an answer offers Regenerate; a read-only session and inactive rows offer no verbs', () => {
    const { actions } = recorder()
    const controls = new HistoryControls(actions, document.createElement('div'))
    controls.update(userRow({ id: 'r', role: 'assistant' }))
    expect(buttons(controls.node)).toEqual(['Regenerate'])
    controls.update(userRow({ visibility: 'inactive', branch: { index: 0, count: 2 } }))
    expect(buttons(controls.node)).toEqual(['‹ (off)', '›'])
    const readOnly = new HistoryControls(recorder(false).actions, document.createElement('div'))
    readOnly.update(userRow())
    expect(buttons(readOnly.node)).toEqual([])
  })
})

describe('queue tray order', () => {
  test('↑, ↓ and Alt+arrows reorder the engine inbox as shown', async () => {
    const { engine, close } = await inProcessEngine()
    try {
      await engine.createSession({ id: 's' })
      await exchange(engine, 's', 'u0', 'running', 'zero')
      // A turn is open so queued inputs wait.
      await engine.admit('s', { id: 'open', text: 'open', delivery: 'queue' })
      await engine.promote('s', 'settled')
      for (const id of ['q1', 'q2', 'q3']) await engine.admit('s', { id, text: id, delivery: 'queue' })
      const order = async () =>
        (await engine.pending('s')).filter((r) => r.delivery === 'queue').map((r) => r.id)
      expect(await order()).toEqual(['q1', 'q2', 'q3'])
      const moves: Promise<unknown>[] = []
      const root = document.createElement('section')
      document.body.append(root)
      const tray = new QueueTray(root, {
        cancel: () => undefined,
        edit: () => undefined,
        reorder: (id, before) => moves.push(engine.reorder('s', id, { before })),
      })
      // The tray shows the engine's order once the moves it asked for are written: a read issued
      // beside an unanswered reorder may or may not see it (reads answer early, 0026).
      const show = async () => {
        await Promise.all(moves.splice(0))
        tray.render(
          (await order()).map(
            (id) => ({ id, text: id, delivery: 'queue', state: 'pending' }) as TimelineInput,
          ),
        )
      }
      const press = (id: string, label: string) =>
        root.querySelector<HTMLButtonElement>(`[data-key="${id}"] button[aria-label="${label}"]`)!.click()
      await show()
      press('q3', 'Move up')
      await show()
      expect(await order()).toEqual(['q1', 'q3', 'q2'])
      press('q1', 'Move down')
      await show()
      expect(await order()).toEqual(['q3', 'q1', 'q2'])
      press('q3', 'Move up') // already first: nothing
      root
        .querySelector(`[data-key="q3"] button[aria-label="Move down"]`)!
        .dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowDown', altKey: true, bubbles: true }))
      await show()
      await show()
      expect(await order()).toEqual(['q1', 'q3', 'q2'])
      press('q2', 'Move down') // already last
      await show()
      expect(await order()).toEqual(['q1', 'q3', 'q2'])
    } finally {
      await close()
    }
  })

  test("the view's queue is the engine's order after a reorder made elsewhere: the tray renders it as it is", async () => {
    const page = await openPage()
    try {
      const { client } = page
      await client.createSession({ id: 's' })
      await client.admit('s', { id: 'open', text: 'open', delivery: 'queue' })
      await page.engine.promote('s', 'settled')
      for (const id of ['q1', 'q2', 'q3']) await client.admit('s', { id, text: id, delivery: 'queue' })
      const view = client.open('s')
      await ready(view)
      const ids = (queued: readonly TimelineInput[]) => queued.map((input) => input.id)
      expect(ids(view.getSnapshot().queued)).toEqual(['q1', 'q2', 'q3'])
      // Moved through the client (another tab, say), not the view: the view hears the ranks.
      await client.reorder('s', 'q3', { before: 'q1' })
      await client.reorder('s', 'q1', { before: null })
      const engineOrder = (await client.pending('s'))
        .filter((r) => r.delivery === 'queue')
        .sort((a, b) => (a.rank ?? a.seq) - (b.rank ?? b.seq) || a.seq - b.seq)
        .map((r) => r.id)
      expect(engineOrder).toEqual(['q3', 'q2', 'q1'])
      await until(view, (s) => ids(s.queued).join() === engineOrder.join())
      view.dispose()
    } finally {
      await page.close()
    }
  })

  test('a pending steer row offers Queue instead; pressed, the input moves to the tray through a real view', async () => {
    const page = await openPage()
    try {
      const { client } = page
      await client.createSession({ id: 's' })
      await client.admit('s', { id: 'open', text: 'open', delivery: 'queue' })
      await page.engine.promote('s', 'settled') // a turn is open: a steer waits for its step
      await client.admit('s', { id: 'st', text: 'look at the tests too', delivery: 'steer' })
      const view = client.open('s')
      await ready(view)
      const snapshot = await until(view, (s) => s.rows.some((row) => row.kind === 'input'))
      const pending = snapshot.rows.find((row) => row.kind === 'input')!
      const rowView = new RowView(pending.key, {
        retry: () => undefined,
        loadGap: () => undefined,
        turnsIn: () => 0,
        respond: () => undefined,
        queueInstead: (inputId) => void client.setDelivery('s', inputId, 'queue'),
      })
      rowView.update(pending)
      const button = [...rowView.node.querySelectorAll('button')].find(
        (b) => b.textContent === 'Queue instead',
      )!
      expect(button.hidden).toBe(false)
      button.click()
      await expect
        .poll(async () => (await client.pending('s')).map((r) => [r.id, r.delivery]))
        .toEqual([['st', 'queue']])
      // The open view follows the change of delivery by itself: the playground needs no reopen.
      const moved = await until(view, (s) => s.queued.some((input) => input.id === 'st'))
      expect(moved.rows.some((row) => row.kind === 'input' && row.input.id === 'st')).toBe(false)
      // A row without the action never shows it.
      const plain = new RowView(pending.key, {
        retry: () => undefined,
        loadGap: () => undefined,
        turnsIn: () => 0,
        respond: () => undefined,
      })
      plain.update(pending)
      expect(
        [...plain.node.querySelectorAll('button')].find((b) => b.textContent === 'Queue instead')?.hidden,
      ).toBe(true)
      view.dispose()
    } finally {
      await page.close()
    }
  })
})
