/**
 * Tool calls a person approves, through real engines on fake-indexeddb: the call waits in the
 * log as `awaiting-approval`, `respondToApproval` answers it from any engine on the database,
 * and a runner that starts later (a reload, a dead worker) takes the waiting turn up.
 */
import { describe, expect, test } from 'vitest'
import type { ModelProvider, ProviderRequest, Tools } from '../../src/engine/provider'
import { STOPPED_REASON } from '../../src/engine/runner-approvals'
import type { Engine } from '../../src/engine/types'
import { isSessionlineError } from '../../src/schema/errors'
import type { ToolPart } from '../../src/schema/messages'
import { comlinkEngine, inProcessEngine } from '../support/engines'
import {
  allEvents,
  allRows,
  countOf,
  expectWellFormed,
  startEngine,
  untilTurnsEnded,
  waitFor,
} from './harness'

/** Step 1 of every turn calls `deploy`; step 2 answers from what the tool part says. */
function deployModel(): { provider: ModelProvider; requests: ProviderRequest[] } {
  const requests: ProviderRequest[] = []
  const provider: ModelProvider = (request) => {
    requests.push(request)
    return (async function* () {
      const calls = request.context.flatMap((row) =>
        row.turn === request.turn && row.role === 'assistant' ? row.parts : [],
      )
      const call = calls.find((part): part is ToolPart => part.type === 'tool')
      if (call === undefined) {
        yield { type: 'text' as const, text: 'Deploying.' }
        yield {
          type: 'tool-call' as const,
          callId: `call_${request.turn}`,
          name: 'deploy',
          input: { target: request.turn === 1 ? 'prod' : 'staging' },
        }
        yield { type: 'finish' as const, finish: 'tool-calls' as const }
        return
      }
      yield { type: 'text' as const, text: `The call is ${call.state}.` }
      yield { type: 'finish' as const, finish: 'stop' as const }
    })()
  }
  return { provider, requests }
}

function deployTools(needsApproval: Tools[string]['needsApproval'] = true) {
  const runs: unknown[] = []
  const tools: Tools = {
    deploy: {
      description: 'Deploys the app',
      needsApproval,
      async run(input) {
        runs.push(input)
        return { deployed: true }
      },
    },
  }
  return { tools, runs }
}

const toolPartOf = async (engine: Engine, sessionId: string, callId: string) => {
  for (const row of await allRows(engine, sessionId))
    for (const part of row.parts) if (part.type === 'tool' && part.callId === callId) return part
  return undefined
}

const untilState = (engine: Engine, sessionId: string, callId: string, state: ToolPart['state']) =>
  waitFor(engine, sessionId, async () => (await toolPartOf(engine, sessionId, callId))?.state === state)

async function failure(promise: Promise<unknown>) {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  if (!isSessionlineError(error)) throw new Error(`expected a SessionlineError, got ${String(error)}`)
  return error
}

describe('durable tool approvals', () => {
  test('approve: the call waits, then runs once, and the turn completes', async () => {
    const { provider } = deployModel()
    const { tools, runs } = deployTools()
    const { engine, sessionId, close } = await startEngine({ provider, tools })
    try {
      await engine.admit(sessionId, { text: 'ship it' })
      await untilState(engine, sessionId, 'call_1', 'awaiting-approval')
      expect(runs).toEqual([])
      await engine.respondToApproval(sessionId, 'call_1', { approved: true })
      await untilTurnsEnded(engine, sessionId, 1)
      const events = await allEvents(engine, sessionId)
      expect(expectWellFormed(events)).toEqual([])
      expect(runs).toEqual([{ target: 'prod' }])
      expect(await toolPartOf(engine, sessionId, 'call_1')).toMatchObject({
        state: 'done',
        output: { deployed: true },
      })
      expect(events.filter((e) => e.type.startsWith('tool/')).map((e) => e.type)).toEqual([
        'tool/call',
        'tool/approval-request',
        'tool/approval',
        'tool/result',
      ])
      expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'completed' } })
    } finally {
      await close()
    }
  })

  test('deny: the call is not run, it reads `denied` with the reason, and the model is told', async () => {
    const { provider, requests } = deployModel()
    const { tools, runs } = deployTools()
    const { engine, sessionId, close } = await startEngine({ provider, tools })
    try {
      await engine.admit(sessionId, { text: 'ship it' })
      await untilState(engine, sessionId, 'call_1', 'awaiting-approval')
      await engine.respondToApproval(sessionId, 'call_1', { approved: false, reason: 'not on a Friday' })
      await untilTurnsEnded(engine, sessionId, 1)
      expect(runs).toEqual([])
      const denied = { error: 'A person denied this tool call', reason: 'not on a Friday' }
      expect(await toolPartOf(engine, sessionId, 'call_1')).toMatchObject({
        state: 'denied',
        isError: true,
        output: denied,
      })
      // The second step's context carries the denial to the model.
      const told = requests[1]!.context.flatMap((row) => row.parts).find((p) => p.type === 'tool')
      expect(told).toMatchObject({ state: 'denied', output: denied })
      const rows = await allRows(engine, sessionId)
      expect(rows.at(-1)!.parts).toEqual([{ type: 'text', text: 'The call is denied.' }])
      expect(expectWellFormed(await allEvents(engine, sessionId))).toEqual([])
    } finally {
      await close()
    }
  })

  test('a rule over the input decides which calls ask', async () => {
    const { provider } = deployModel()
    const { tools, runs } = deployTools(async (input) => (input as { target: string }).target === 'prod')
    const { engine, sessionId, close } = await startEngine({ provider, tools })
    try {
      await engine.admit(sessionId, { text: 'prod' })
      await untilState(engine, sessionId, 'call_1', 'awaiting-approval')
      await engine.respondToApproval(sessionId, 'call_1', { approved: true })
      await untilTurnsEnded(engine, sessionId, 1)
      // Turn 2 deploys to staging: the rule says no approval is needed.
      await engine.admit(sessionId, { text: 'staging' })
      await untilTurnsEnded(engine, sessionId, 2)
      expect(runs).toEqual([{ target: 'prod' }, { target: 'staging' }])
      expect(countOf(await allEvents(engine, sessionId), 'tool/approval-request')).toBe(1)
    } finally {
      await close()
    }
  })

  test('remember `session` asks no more in that session; `always` in none, until revoked', async () => {
    const { provider } = deployModel()
    const { tools, runs } = deployTools()
    const { engine, sessionId, close } = await startEngine({ provider, tools })
    try {
      await engine.admit(sessionId, { text: 'one' })
      await untilState(engine, sessionId, 'call_1', 'awaiting-approval')
      await engine.respondToApproval(sessionId, 'call_1', { approved: true, remember: 'session' })
      await untilTurnsEnded(engine, sessionId, 1)
      expect(await engine.toolApprovals(sessionId)).toEqual({ always: [], session: ['deploy'] })
      await engine.admit(sessionId, { text: 'two' })
      await untilTurnsEnded(engine, sessionId, 2)
      expect(countOf(await allEvents(engine, sessionId), 'tool/approval-request')).toBe(1)

      // Another session still asks; answered `always`, no session asks any more.
      const other = (await engine.createSession({ title: 'other' })).id
      await engine.admit(other, { text: 'three' })
      await untilState(engine, other, 'call_1', 'awaiting-approval')
      await engine.respondToApproval(other, 'call_1', { approved: true, remember: 'always' })
      await untilTurnsEnded(engine, other, 1)
      const third = (await engine.createSession({ title: 'third' })).id
      expect(await engine.toolApprovals(third)).toEqual({ always: ['deploy'], session: [] })
      await engine.admit(third, { text: 'four' })
      await untilTurnsEnded(engine, third, 1)
      expect(countOf(await allEvents(engine, third), 'tool/approval-request')).toBe(0)
      expect(runs).toHaveLength(4)

      // Revoked: the tool asks again.
      await engine.revokeToolApproval({ tool: 'deploy' })
      expect(await engine.toolApprovals(third)).toEqual({ always: [], session: [] })
      await engine.admit(third, { text: 'five' })
      await untilState(engine, third, 'call_2', 'awaiting-approval')
      await engine.interrupt(third)
      await untilTurnsEnded(engine, third, 2)
      expect(runs).toHaveLength(4)
    } finally {
      await close()
    }
  })

  test('Stop while a call waits denies it and ends the turn aborted', async () => {
    const { provider } = deployModel()
    const { tools, runs } = deployTools()
    const { engine, sessionId, close } = await startEngine({ provider, tools })
    try {
      await engine.admit(sessionId, { text: 'ship it' })
      await untilState(engine, sessionId, 'call_1', 'awaiting-approval')
      await engine.interrupt(sessionId)
      await untilTurnsEnded(engine, sessionId, 1)
      const events = await allEvents(engine, sessionId)
      expect(expectWellFormed(events)).toEqual([])
      expect(runs).toEqual([])
      expect(await toolPartOf(engine, sessionId, 'call_1')).toMatchObject({
        state: 'denied',
        output: { reason: STOPPED_REASON },
      })
      expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
      // The call waits no more: a late answer is refused and writes nothing.
      const late = await failure(engine.respondToApproval(sessionId, 'call_1', { approved: true }))
      expect(late.code).toBe('invalid_state')
      expect(await allEvents(engine, sessionId)).toEqual(events)
    } finally {
      await close()
    }
  })

  test('a fresh engine on the database sees the waiting call and the turn resumes after the answer', async () => {
    const { provider, requests } = deployModel()
    const { tools, runs } = deployTools()
    const first = await startEngine({ provider, tools })
    const { sessionId, dbName } = first
    await first.engine.admit(sessionId, { text: 'ship it' })
    await untilState(first.engine, sessionId, 'call_1', 'awaiting-approval')
    // The worker goes away while the call waits: the turn stays open in the log.
    await first.close()

    const second = await inProcessEngine({ dbName, provider, tools })
    try {
      const { engine } = second
      expect(await toolPartOf(engine, sessionId, 'call_1')).toMatchObject({ state: 'awaiting-approval' })
      expect((await allEvents(engine, sessionId)).some((e) => e.type === 'turn/end')).toBe(false)
      await engine.respondToApproval(sessionId, 'call_1', { approved: true })
      await untilTurnsEnded(engine, sessionId, 1)
      const events = await allEvents(engine, sessionId)
      expect(expectWellFormed(events)).toEqual([])
      expect(runs).toEqual([{ target: 'prod' }])
      expect(requests).toHaveLength(2)
      expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'completed' } })
      expect((await allRows(engine, sessionId)).at(-1)!.parts).toEqual([
        { type: 'text', text: 'The call is done.' },
      ])
    } finally {
      await second.close()
    }
  })

  test('another engine on the database answers, and the waiting runner goes on', async () => {
    const { provider } = deployModel()
    const { tools, runs } = deployTools()
    const running = await startEngine({ provider, tools })
    const other = await inProcessEngine({ dbName: running.dbName })
    try {
      const { sessionId } = running
      await running.engine.admit(sessionId, { text: 'ship it' })
      await untilState(other.engine, sessionId, 'call_1', 'awaiting-approval')
      await other.engine.respondToApproval(sessionId, 'call_1', { approved: true })
      await untilTurnsEnded(running.engine, sessionId, 1)
      expect(runs).toEqual([{ target: 'prod' }])
    } finally {
      await other.close()
      await running.close()
    }
  })

  test('through Comlink: the page answers, and a refusal arrives as the same typed error', async () => {
    const { provider } = deployModel()
    const { tools, runs } = deployTools()
    const { engine, sessionId, close } = await startEngine({ provider, tools }, comlinkEngine)
    try {
      await engine.admit(sessionId, { text: 'ship it' })
      await untilState(engine, sessionId, 'call_1', 'awaiting-approval')
      const wrong = await failure(engine.respondToApproval(sessionId, 'call_2', { approved: true }))
      expect(wrong).toMatchObject({ code: 'invalid_state', details: { callId: 'call_2' } })
      await engine.respondToApproval(sessionId, 'call_1', { approved: true, remember: 'session' })
      await untilTurnsEnded(engine, sessionId, 1)
      expect(runs).toEqual([{ target: 'prod' }])
      expect(await engine.toolApprovals(sessionId)).toEqual({ always: [], session: ['deploy'] })
      await engine.revokeToolApproval({ tool: 'deploy', sessionId })
      expect(await engine.toolApprovals(sessionId)).toEqual({ always: [], session: [] })
    } finally {
      await close()
    }
  })

  test('respondToApproval refuses, writing nothing, a call that waits no more or never did, and bad answers', async () => {
    const { provider } = deployModel()
    const { tools } = deployTools()
    const { engine, sessionId, close } = await startEngine({ provider, tools })
    try {
      await engine.admit(sessionId, { text: 'ship it' })
      await untilState(engine, sessionId, 'call_1', 'awaiting-approval')
      const before = await allEvents(engine, sessionId)
      const unknown = await failure(engine.respondToApproval(sessionId, 'call_nope', { approved: true }))
      expect(unknown).toMatchObject({ code: 'invalid_state', details: { callId: 'call_nope' } })
      const bad = await failure(
        engine.respondToApproval(sessionId, 'call_1', { approved: 'yes' } as unknown as {
          approved: boolean
        }),
      )
      expect(bad.code).toBe('invalid_input')
      expect(await allEvents(engine, sessionId)).toEqual(before)

      await engine.respondToApproval(sessionId, 'call_1', { approved: true })
      await untilTurnsEnded(engine, sessionId, 1)
      const after = await allEvents(engine, sessionId)
      const twice = await failure(engine.respondToApproval(sessionId, 'call_1', { approved: false }))
      expect(twice.code).toBe('invalid_state')
      expect(await allEvents(engine, sessionId)).toEqual(after)
    } finally {
      await close()
    }
  })
})
