/**
 * Export and import of whole sessions (DESIGN.md §11, docs/decisions/0032): the `sessionline`
 * format restores the same native session in a fresh database (a property over generated
 * sessions with turns, tools, cancelled and pending inputs and attachments), exporting it again
 * gives the same bytes, and a damaged file is refused by name with nothing written.
 */
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import type { Engine } from '../../src/engine/types'
import { isSessionlineError } from '../../src/schema/errors'
import type { SessionEvent } from '../../src/schema/events'
import type { InputReceipt } from '../../src/schema/inputs'
import { openDb } from '../../src/store/db'
import { arbSessionLog } from '../support/arb-log'
import { engineKinds, inProcessEngine, type TestEngine } from '../support/engines'

async function tablesOf(dbName: string): Promise<Record<string, unknown[]>> {
  const db = openDb(dbName, { indexedDB, IDBKeyRange })
  try {
    await db.open()
    const out: Record<string, unknown[]> = {}
    for (const table of db.tables) out[table.name] = await table.toArray()
    return out
  } finally {
    db.close()
  }
}

async function receiptsOf(dbName: string, sessionId: string): Promise<InputReceipt[]> {
  const inputs = (await tablesOf(dbName)).inputs as InputReceipt[]
  return inputs.filter((r) => r.sessionId === sessionId).sort((a, b) => a.seq - b.seq)
}

const bytesOf = async (blob: Blob) => new Uint8Array(await blob.arrayBuffer())

async function failure(call: Promise<unknown>) {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  )
  return isSessionlineError(error) ? { code: error.code, message: error.message } : { code: String(error) }
}

/** One input a generated session admits after its log: its files, and what becomes of it. */
const arbInput = fc.record({
  text: fc.oneof(fc.constant(''), fc.string({ minLength: 1, maxLength: 20 })),
  delivery: fc.constantFrom('steer' as const, 'queue' as const),
  files: fc.array(
    fc.record({
      bytes: fc.uint8Array({ minLength: 0, maxLength: 200 }),
      mediaType: fc.constantFrom('image/png', 'application/pdf', 'text/plain'),
      name: fc.constantFrom('shot.png', 'paper.pdf', 'notes.txt', 'a b (1).png'),
    }),
    { maxLength: 3 },
  ),
  fate: fc.constantFrom('pending', 'cancelled', 'promoted'),
})

type GeneratedInput = typeof arbInput extends fc.Arbitrary<infer T> ? T : never

/** Builds a session through the public API: a generated log, then inputs with files. */
async function buildSession(engine: Engine, log: readonly SessionEvent[], inputs: readonly GeneratedInput[]) {
  const { id } = await engine.createSession({ title: 'generated' })
  const rest = log.filter((e) => e.type !== 'session/created')
  if (rest.length > 0) await engine.append(id, rest)
  const lastTurn = Math.max(0, ...log.flatMap((e) => (e.type === 'turn/start' ? [e.data.turn] : [])))
  let promoted = false
  for (const input of inputs) {
    const text = input.text.trim() === '' && input.files.length === 0 ? 'words' : input.text
    const receipt = await engine.admit(id, {
      text,
      delivery: input.delivery,
      attachments: input.files.map((f) => ({
        name: f.name,
        mediaType: f.mediaType,
        data: new Blob([f.bytes]),
      })),
    })
    if (input.fate === 'cancelled') await engine.cancel(id, receipt.id)
    if (input.fate === 'promoted' && !promoted) {
      const rows = await engine.promote(id, 'settled')
      if (rows.length > 0) {
        promoted = true
        const turn = lastTurn + 1
        const messageId = `answer-${turn}`
        await engine.append(id, [
          { type: 'step/start', data: { turn, step: 1 } },
          { type: 'assistant/start', data: { messageId, turn, step: 1 } },
          { type: 'assistant/delta', data: { messageId, text: 'I see the files.' } },
          { type: 'assistant/end', data: { messageId, finish: 'stop' } },
          { type: 'step/end', data: { turn, step: 1 } },
          { type: 'turn/end', data: { turn, reason: 'completed' } },
        ])
      }
    }
  }
  return id
}

/** What a session is, read through the public API and the inputs table. */
async function contentOf(t: TestEngine, sessionId: string) {
  const { engine } = t
  const receipts = await receiptsOf(t.dbName, sessionId)
  const ids = [...new Set(receipts.flatMap((r) => (r.attachments ?? []).map((a) => a.attachmentId)))].sort()
  const bytes = await Promise.all(ids.map(async (a) => bytesOf((await engine.attachment(a)) as Blob)))
  return {
    info: await engine.getSession(sessionId),
    events: await engine.events(sessionId, { limit: 10_000 }),
    rows: (await engine.page(sessionId, { limit: 1000, includeInactive: true })).messages,
    receipts,
    outline: await engine.projection(sessionId, 'turnOutline'),
    usage: await engine.projection(sessionId, 'usage'),
    pending: await engine.pending(sessionId),
    bytes: Object.fromEntries(ids.map((a, i) => [a, bytes[i]])),
  }
}

test('any generated session exported and imported into a fresh database is the same session, and exports to the same bytes', async () => {
  await fc.assert(
    fc.asyncProperty(
      arbSessionLog({ maxTurns: 3, openTail: false, maxSteps: 2 }),
      fc.array(arbInput, { maxLength: 5 }),
      async (log, inputs) => {
        const from = await inProcessEngine()
        const to = await inProcessEngine()
        try {
          const id = await buildSession(from.engine, log, inputs)
          const exported = await from.engine.exportSession(id)
          const info = await to.engine.importTranscript({ blob: exported })
          expect(info).toEqual(await from.engine.getSession(id))
          expect(await contentOf(to, id)).toEqual(await contentOf(from, id))
          const again = await to.engine.exportSession(id)
          expect(await bytesOf(again)).toEqual(await bytesOf(exported))
        } finally {
          await from.close()
          await to.close()
        }
      },
    ),
    { numRuns: 25, seed: 25 },
  )
})

test('two generated sessions in one file import as importing each in turn would, or not at all', async () => {
  const arbSession = fc.tuple(
    arbSessionLog({ maxTurns: 2, openTail: false, maxSteps: 2 }),
    fc.array(arbInput, { maxLength: 3 }),
  )
  await fc.assert(
    fc.asyncProperty(arbSession, arbSession, async ([logA, inputsA], [logB, inputsB]) => {
      // Two sources: generated logs may share row ids, which one database refuses (a conflict).
      const sources = [await inProcessEngine(), await inProcessEngine()]
      const oneByOne = await inProcessEngine()
      const together = await inProcessEngine()
      try {
        const a = await buildSession(sources[0]!.engine, logA, inputsA)
        const b = await buildSession(sources[1]!.engine, logB, inputsB)
        const files = [await sources[0]!.engine.exportSession(a), await sources[1]!.engine.exportSession(b)]
        await oneByOne.engine.importTranscript({ blob: files[0]! })
        const second = await failure(oneByOne.engine.importTranscript({ blob: files[1]! }))
        const before = await tablesOf(together.dbName)
        const both = await failure(together.engine.importTranscript({ blob: new Blob(files) }))
        // `failure` of a call that succeeded gives the code 'undefined'.
        if (second.code !== 'undefined') {
          // The second refused on its own (generated logs share row ids now and then: a conflict): the file is refused whole, with the same code.
          expect(both.code).toBe(second.code)
          expect(await tablesOf(together.dbName)).toEqual(before)
          return
        }
        expect(both.code).toBe('undefined')
        for (const id of [a, b]) {
          expect(await contentOf(together, id)).toEqual(await contentOf(oneByOne, id))
          expect(await bytesOf(await together.engine.exportSession(id))).toEqual(
            await bytesOf(await oneByOne.engine.exportSession(id)),
          )
        }
      } finally {
        for (const t of [...sources, oneByOne, together]) await t.close()
      }
    }),
    { numRuns: 10, seed: 32 },
  )
})

describe.each(engineKinds)('sessionline files %s', (_, makeEngine) => {
  async function exported(t: TestEngine) {
    const { id } = await t.engine.createSession({ id: 's1', title: 'Trip' })
    await t.engine.admit(id, {
      id: 'in-1',
      text: 'look at this',
      attachments: [{ name: 'map.png', mediaType: 'image/png', data: new Blob([new Uint8Array([1, 2, 3])]) }],
    })
    await t.engine.promote(id, 'settled')
    await t.engine.admit(id, { id: 'in-2', text: 'and later', delivery: 'queue' })
    return t.engine.exportSession(id)
  }

  test('the export starts with a header naming the format, its version, the session and the hash', async () => {
    const t = await makeEngine()
    try {
      const text = await (await exported(t)).text()
      const lines = text.split('\n')
      expect(JSON.parse(lines[0] as string)).toEqual({
        format: 'sessionline',
        version: 1,
        sessionId: 's1',
        sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
        // session, 3 events (created, turn/start, user/message), 2 receipts, 1 attachment
        lines: 7,
      })
      expect(lines.slice(1, -1).map((l) => JSON.parse(l).kind)).toEqual([
        'session',
        'event',
        'event',
        'event',
        'input',
        'input',
        'attachment',
      ])
    } finally {
      await t.close()
    }
  })

  test('importing where the session still exists is a conflict, writing nothing', async () => {
    const t = await makeEngine()
    try {
      const blob = await exported(t)
      const before = await tablesOf(t.dbName)
      expect((await failure(t.engine.importTranscript({ blob }))).code).toBe('conflict')
      expect(await tablesOf(t.dbName)).toEqual(before)
    } finally {
      await t.close()
    }
  })

  test('a truncated file, a wrong hash, an unknown version or bytes that are not their id: invalid_input, nothing written', async () => {
    const source = await makeEngine()
    const t = await makeEngine()
    try {
      const text = await (await exported(source)).text()
      const [header, ...rest] = text.split('\n')
      const body = rest.join('\n')
      const parsedHeader = JSON.parse(header as string)
      const reHashed = async (newBody: string) => {
        const digest = new Uint8Array(
          await crypto.subtle.digest('SHA-256', new TextEncoder().encode(newBody)),
        )
        const sha256 = [...digest].map((b) => b.toString(16).padStart(2, '0')).join('')
        return `${JSON.stringify({ ...parsedHeader, sha256 })}\n${newBody}`
      }
      const attachmentLine = rest.find((l) => l.includes('"kind":"attachment"')) as string
      const otherBytes = attachmentLine.replace(/"data":"[^"]*"/, '"data":"BAUG"')
      const bad: [string, string, RegExp][] = [
        ['truncated', text.slice(0, Math.floor(text.length / 2)), /hash|truncated/],
        ['header only', `${header}`, /truncated/],
        ['wrong hash', text.replace('look at this', 'look at that'), /hash/],
        ['unknown version', `${JSON.stringify({ ...parsedHeader, version: 2 })}\n${body}`, /version 2/],
        [
          'changed bytes',
          await reHashed(body.replace(attachmentLine, otherBytes)),
          /not the ones its id names/,
        ],
        ['a line too few', await reHashed(body.replace(`${attachmentLine}\n`, '')), /lines/],
      ]
      const before = await tablesOf(t.dbName)
      for (const [what, file, message] of bad) {
        const result = await failure(t.engine.importTranscript({ blob: new Blob([file]) }))
        expect(result.code, what).toBe('invalid_input')
        expect(result.message, what).toMatch(message)
        expect(await tablesOf(t.dbName), what).toEqual(before)
      }
    } finally {
      await source.close()
      await t.close()
    }
  })

  /** A second session, sharing the first one's file: 'export all' puts both in one file. */
  async function secondExport(t: TestEngine) {
    const { id } = await t.engine.createSession({ id: 's2', title: 'Maps' })
    await t.engine.admit(id, {
      id: 'in-3',
      text: 'the same map',
      attachments: [
        { name: 'again.png', mediaType: 'image/png', data: new Blob([new Uint8Array([1, 2, 3])]) },
      ],
    })
    return t.engine.exportSession(id)
  }

  test('several exports back to back import as all their sessions, each the same again', async () => {
    const source = await makeEngine()
    const t = await makeEngine()
    try {
      const first = await exported(source)
      const second = await secondExport(source)
      const info = await t.engine.importTranscript({ blob: new Blob([first, second]) })
      expect(info).toEqual(await source.engine.getSession('s1')) // the first session answers
      expect((await t.engine.listSessions()).map((s) => s.id).sort()).toEqual(['s1', 's2'])
      expect(await bytesOf(await t.engine.exportSession('s1'))).toEqual(await bytesOf(first))
      expect(await bytesOf(await t.engine.exportSession('s2'))).toEqual(await bytesOf(second))
      // The shared file is stored once and outlives one of its sessions.
      const stored = (await tablesOf(t.dbName)).attachments as unknown[]
      expect(stored).toHaveLength(1)
      await t.engine.deleteSession('s1')
      const [part] = (await t.engine.pending('s2'))[0]?.attachments ?? []
      expect(await bytesOf((await t.engine.attachment(part!.attachmentId)) as Blob)).toEqual(
        new Uint8Array([1, 2, 3]),
      )
    } finally {
      await source.close()
      await t.close()
    }
  })

  test('several exports: one bad, existing or repeated session refuses the whole file, writing nothing', async () => {
    const source = await makeEngine()
    const t = await makeEngine()
    try {
      const first = await exported(source)
      const second = await secondExport(source)
      const secondText = await second.text()
      const cases: [string, Blob, string][] = [
        [
          'second changed',
          new Blob([first, secondText.replace('the same map', 'another map')]),
          'invalid_input',
        ],
        ['second truncated', new Blob([first, secondText.slice(0, -5)]), 'invalid_input'],
        ['a stray line after both', new Blob([first, second, '{"kind":"session"}\n']), 'invalid_input'],
        ['the same session twice', new Blob([first, second, first]), 'conflict'],
      ]
      const before = await tablesOf(t.dbName)
      for (const [what, blob, code] of cases) {
        expect((await failure(t.engine.importTranscript({ blob }))).code, what).toBe(code)
        expect(await tablesOf(t.dbName), what).toEqual(before)
      }
      // The second session exists here: the first, new, is not written either.
      await t.engine.importTranscript({ blob: second })
      const withSecond = await tablesOf(t.dbName)
      expect((await failure(t.engine.importTranscript({ blob: new Blob([first, second]) }))).code).toBe(
        'conflict',
      )
      expect(await tablesOf(t.dbName)).toEqual(withSecond)
    } finally {
      await source.close()
      await t.close()
    }
  })

  test('markdown renders the visible path with files by name', async () => {
    const t = await makeEngine()
    try {
      const { id } = await t.engine.createSession({ title: 'Trip' })
      await t.engine.admit(id, {
        text: 'where is this?',
        attachments: [
          { name: 'map (1).png', mediaType: 'image/png', data: new Blob([new Uint8Array([9])]) },
          { name: 'plan.pdf', mediaType: 'application/pdf', data: new Blob([new Uint8Array([8])]) },
        ],
      })
      await t.engine.promote(id, 'settled')
      await t.engine.append(id, [
        { type: 'step/start', data: { turn: 1, step: 1 } },
        { type: 'assistant/start', data: { messageId: 'a1', turn: 1, step: 1 } },
        { type: 'assistant/delta', data: { messageId: 'a1', reasoning: 'hmm', text: 'Looking it up.' } },
        { type: 'tool/call', data: { messageId: 'a1', callId: 'c1', name: 'search', input: { q: 'map' } } },
        { type: 'assistant/end', data: { messageId: 'a1', finish: 'tool-calls' } },
        { type: 'tool/result', data: { callId: 'c1', output: 'Lisbon', isError: false } },
        { type: 'step/end', data: { turn: 1, step: 1 } },
        { type: 'turn/end', data: { turn: 1, reason: 'completed' } },
      ])
      await t.engine.admit(id, { text: 'still pending' })
      const markdown = await (await t.engine.exportSession(id, { format: 'markdown' })).text()
      expect(markdown).toBe(
        `${[
          '# Trip',
          '## User',
          'where is this?',
          '![map (1).png](map%20%281%29.png)',
          '[plan.pdf](plan.pdf)',
          '## Assistant',
          'Looking it up.',
          '**Tool `search`**',
          '```json\n{\n  "q": "map"\n}\n```',
          '```\nLisbon\n```',
        ].join('\n\n')}\n`,
      )
    } finally {
      await t.close()
    }
  })
})

test('an imported Pi session exports with its rows and comes back the same after a delete', async () => {
  const { readFileSync } = await import('node:fs')
  const text = readFileSync(
    new URL('../import/fixtures/pi/tree-v3-branch-compaction.jsonl', import.meta.url),
    'utf8',
  )
  const t = await inProcessEngine()
  try {
    const info = await t.engine.importTranscript({ text, name: 'tree.jsonl' })
    const before = {
      info: await t.engine.getSession(info.id),
      rows: (await t.engine.page(info.id, { limit: 1000, includeInactive: true })).messages,
      outline: await t.engine.projection(info.id, 'turnOutline'),
      usage: await t.engine.projection(info.id, 'usage'),
    }
    const file = await t.engine.exportSession(info.id)
    const kinds = new Set(
      (await file.text())
        .split('\n')
        .slice(1, -1)
        .map((l) => JSON.parse(l).kind),
    )
    expect(kinds).toEqual(new Set(['session', 'row']))
    await t.engine.deleteSession(info.id)
    expect((await t.engine.importTranscript({ blob: file })).id).toBe(info.id)
    expect({
      info: await t.engine.getSession(info.id),
      rows: (await t.engine.page(info.id, { limit: 1000, includeInactive: true })).messages,
      outline: await t.engine.projection(info.id, 'turnOutline'),
      usage: await t.engine.projection(info.id, 'usage'),
    }).toEqual(before)
    expect(await bytesOf(await t.engine.exportSession(info.id))).toEqual(await bytesOf(file))
    // Still read-only, as the original import was.
    expect((await failure(t.engine.admit(info.id, { text: 'x' }))).code).toBe('invalid_state')
  } finally {
    await t.close()
  }
})

test('a branched and compacted session exports its head and tree, and imports to the same rows, context and outline', async () => {
  await fc.assert(
    fc.asyncProperty(
      arbSessionLog({ maxTurns: 4, openTail: false, maxSteps: 2 }),
      fc.nat(),
      fc.boolean(),
      async (log, pick, compactFirst) => {
        const from = await inProcessEngine()
        const to = await inProcessEngine()
        try {
          const id = await buildSession(from.engine, log, [])
          const rowsOf = async () => (await from.engine.page(id, { limit: 1000 })).messages
          const prompts = (await rowsOf()).filter((r) => r.role === 'user')
          if (compactFirst && prompts.length > 1)
            await from.engine.compact(id, { throughSeq: prompts[1]!.seq - 1, summary: 'what came first' })
          const visiblePrompts = (await rowsOf()).filter((r) => r.role === 'user')
          if (visiblePrompts.length > 0) {
            const target = visiblePrompts[pick % visiblePrompts.length]!
            // A rewind moves the head before the prompt; a resend then grows a second branch there.
            await from.engine.rewind(id, target.id)
            await from.engine.resend(id, target.id, { text: 'asked again', id: `again-${pick}` })
          }
          const exported = await from.engine.exportSession(id)
          await to.engine.importTranscript({ blob: exported })
          expect(await contentOf(to, id)).toEqual(await contentOf(from, id))
          expect(await to.engine.context(id)).toEqual(await from.engine.context(id))
          expect(await bytesOf(await to.engine.exportSession(id))).toEqual(await bytesOf(exported))
        } finally {
          await from.close()
          await to.close()
        }
      },
    ),
    { numRuns: 15, seed: 23 },
  )
})
