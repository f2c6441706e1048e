import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { LIST_CHUNK, listOfChunks } from '../../src/core/chunked-list'
import { foldEvents, initFolds } from '../../src/core/folds'
import { createLiveProjection } from '../../src/core/live-projection'
import { clampPrompt, clampResponse } from '../../src/core/preview'
import { replay } from '../../src/core/projection'
import { createOutlineReplay, type OutlineState, turnOutline } from '../../src/core/turn-outline'
import type { SessionEvent, StoredEvent } from '../../src/schema/events'
import { TurnOutlineEntry } from '../../src/schema/session'
import { arbSessionLog, stamp } from '../support/arb-log'

const SEED = 61_124

const turnStart = (turn: number): SessionEvent => ({ type: 'turn/start', data: { turn } })
const turnEnd = (turn: number, reason: 'completed' | 'aborted' = 'completed'): SessionEvent => ({
  type: 'turn/end',
  data: { turn, reason },
})
const prompt = (
  text: string,
  source: 'user' | 'synthetic' = 'user',
  inputId = `in-${text.length}`,
): SessionEvent => ({
  type: 'user/message',
  data: { inputId, text, delivery: 'steer', source },
})
const step = (turn: number, n: number): SessionEvent[] => [
  { type: 'step/start', data: { turn, step: n } },
  { type: 'assistant/start', data: { messageId: `m-${turn}-${n}`, turn, step: n } },
]
const say = (turn: number, n: number, text: string): SessionEvent => ({
  type: 'assistant/delta',
  data: { messageId: `m-${turn}-${n}`, text },
})
const endStep = (turn: number, n: number): SessionEvent[] => [
  { type: 'assistant/end', data: { messageId: `m-${turn}-${n}`, finish: 'stop' } },
  { type: 'step/end', data: { turn, step: n, usage: { input: 1, output: 1 } } },
]

const outlineOf = (events: readonly StoredEvent[]) => turnOutline.view(replay(turnOutline, events))

/** Counts pushes through the identity gate while `events` are applied one at a time. */
function pushesPerEvent(events: readonly StoredEvent[]): number[] {
  const live = createLiveProjection(turnOutline)
  let pushes = 0
  live.subscribe(() => {
    pushes += 1
  })
  return events.map((event) => {
    const before = pushes
    live.apply([event])
    return pushes - before
  })
}

/** What the outline must say, read the obvious way from whole texts (valid logs only). */
function referenceOutline(events: readonly StoredEvent[]): TurnOutlineEntry[] {
  const entries: TurnOutlineEntry[] = []
  let open:
    | { entry: TurnOutlineEntry; prompted: boolean; texts: Map<string, string>; newest?: string }
    | undefined
  for (const e of events) {
    if (e.type === 'turn/start') {
      open = {
        entry: { turn: e.data.turn, seq: e.seq, prompt: '', response: '' },
        prompted: false,
        texts: new Map(),
      }
      entries.push(open.entry)
    } else if (open && e.type === 'user/message' && e.data.source === 'user' && !open.prompted) {
      open.prompted = true
      open.entry.prompt = clampPrompt(e.data.text)
    } else if (open && e.type === 'assistant/delta' && e.data.text) {
      open.texts.set(e.data.messageId, (open.texts.get(e.data.messageId) ?? '') + e.data.text)
      open.newest = e.data.messageId
    } else if (open && e.type === 'turn/end') {
      if (open.newest !== undefined) open.entry.response = clampResponse(open.texts.get(open.newest)!)
      open = undefined
    }
  }
  return entries
}

describe('turn outline', () => {
  test('is empty before any turn, and ignores what comes before it', () => {
    const init = turnOutline.init()
    expect(turnOutline.view(init)).toEqual([])
    const events = stamp([{ type: 'session/created', data: { title: 't' } }, prompt('too early')], 's')
    expect(replay(turnOutline, events, init)).toBe(init)
  })

  test('shows the open turn at once, fills its prompt, and keeps its response empty until it ends', () => {
    const events = stamp(
      [
        { type: 'session/created', data: { title: 't' } },
        turnStart(1),
        prompt('  Why is   the\n build red? '),
        ...step(1, 1),
        say(1, 1, 'Because the '),
        say(1, 1, 'lockfile\n\n\nis stale.'),
        ...endStep(1, 1),
        turnEnd(1),
      ],
      's',
      10,
    )
    expect(outlineOf(events.slice(0, 2))).toEqual([{ turn: 1, seq: 11, prompt: '', response: '' }])
    expect(outlineOf(events.slice(0, 3))).toEqual([
      { turn: 1, seq: 11, prompt: 'Why is the build red?', response: '' },
    ])
    expect(outlineOf(events.slice(0, -1))[0]!.response).toBe('')
    expect(outlineOf(events)).toEqual([
      { turn: 1, seq: 11, prompt: 'Why is the build red?', response: 'Because the lockfile\nis stale.' },
    ])
  })

  test('the response is the newest assistant text of the turn', () => {
    const events = stamp(
      [
        turnStart(1),
        prompt('q'),
        ...step(1, 1),
        say(1, 1, 'Let me look.'),
        ...endStep(1, 1),
        ...step(1, 2),
        { type: 'assistant/delta', data: { messageId: 'm-1-2', reasoning: 'only thinking' } },
        ...endStep(1, 2),
        ...step(1, 3),
        say(1, 3, 'Found it.'),
        ...endStep(1, 3),
        ...step(1, 4),
        ...endStep(1, 4),
        turnEnd(1),
      ],
      's',
    )
    expect(outlineOf(events)[0]!.response).toBe('Found it.')
  })

  test('clips 500,000-character blocks to 50 and 120 characters and keeps its state small', () => {
    const block = 'All work and no play makes a long block. '.repeat(12_500).slice(0, 500_000)
    const chunks = Array.from({ length: 100 }, (_, i) => say(1, 1, block.slice(i * 5000, (i + 1) * 5000)))
    for (const stream of [[say(1, 1, block)], chunks]) {
      const events = stamp([turnStart(1), prompt(block), ...step(1, 1), ...stream], 's')
      const open = replay(turnOutline, events)
      expect(JSON.stringify(open).length).toBeLessThan(10_000)
      const [entry] = outlineOf([...events, ...stamp([turnEnd(1)], 's', events.length + 1)])
      expect(entry!.prompt.length).toBeLessThanOrEqual(50)
      expect(entry!.response.length).toBeLessThanOrEqual(120)
      expect(entry!.prompt).toBe(clampPrompt(block))
      expect(entry!.response).toBe(clampResponse(block))
    }
  })

  test('takes the first human prompt only: synthetic messages and later steers are ignored', () => {
    const events = stamp(
      [
        turnStart(1),
        prompt('system nudge', 'synthetic', 'a'),
        prompt('the real question', 'user', 'b'),
        ...step(1, 1),
        ...endStep(1, 1),
        prompt('a steer', 'user', 'c'),
        turnEnd(1),
      ],
      's',
    )
    expect(outlineOf(events)[0]!.prompt).toBe('the real question')
    const before = replay(turnOutline, events.slice(0, 3))
    expect(turnOutline.apply(before, events[5]!)).toBe(before)
  })

  test('skips turn numbers that do not advance, with their messages', () => {
    const events = stamp(
      [
        turnStart(2),
        prompt('two'),
        turnEnd(2),
        turnStart(2),
        prompt('two again'),
        turnEnd(2),
        turnStart(1),
        prompt('one'),
        turnEnd(1),
        turnStart(5),
        turnStart(6),
        prompt('five'),
        turnEnd(5),
      ],
      's',
    )
    expect(outlineOf(events)).toEqual([
      { turn: 2, seq: 1, prompt: 'two', response: '' },
      { turn: 5, seq: 10, prompt: 'five', response: '' },
    ])
  })

  test('returns the same state object for events it ignores', () => {
    const state = replay(turnOutline, stamp([turnStart(1), prompt('p'), ...step(1, 1)], 's'))
    const ignored: SessionEvent[] = [
      { type: 'session/created', data: { title: 'x' } },
      ...step(1, 2),
      { type: 'assistant/delta', data: { messageId: 'm-1-1', reasoning: 'hmm' } },
      say(1, 1, ''),
      { type: 'tool/call', data: { messageId: 'm-1-1', callId: 'c', name: 'n', input: null } },
      { type: 'tool/result', data: { callId: 'c', output: null, isError: false } },
      ...endStep(1, 1),
      prompt('steer'),
      turnEnd(7),
    ]
    for (const event of stamp(ignored, 's', 100)) expect(turnOutline.apply(state, event)).toBe(state)
    const outside: OutlineState = turnOutline.init()
    for (const event of stamp(ignored, 's', 100)) expect(turnOutline.apply(outside, event)).toBe(outside)
  })

  test('shows the words the page shows for the whole text, even past the scan window', () => {
    const arbSparse = fc
      .tuple(fc.lorem({ maxCount: 2 }), fc.integer({ min: 4000, max: 4200 }), fc.lorem({ maxCount: 2 }))
      .map(([head, spaces, tail]) => `${head}${' '.repeat(spaces)}${tail}`)
    fc.assert(
      fc.property(arbSparse, fc.integer({ min: 1, max: 5000 }), (text, size) => {
        const chunks: SessionEvent[] = []
        for (let i = 0; i < text.length; i += size) chunks.push(say(1, 1, text.slice(i, i + size)))
        const events = stamp([turnStart(1), prompt(text), ...step(1, 1), ...chunks, turnEnd(1)], 's')
        const [entry] = outlineOf(events)
        expect(entry!.prompt).toBe(clampPrompt(text))
        expect(entry!.response).toBe(clampResponse(text))
      }),
      { seed: SEED + 3, numRuns: 200 },
    )
  })

  test('stops growing its draft once the preview is settled', () => {
    const long = 'x'.repeat(5000)
    const state = replay(turnOutline, stamp([turnStart(1), prompt('p'), ...step(1, 1), say(1, 1, long)], 's'))
    expect(turnOutline.apply(state, stamp([say(1, 1, 'more')], 's', 10)[0]!)).toBe(state)
  })
})

describe('turn outline through the identity gate', () => {
  test('pushes three times for a turn: it opens, its prompt arrives, its response commits', () => {
    const events = stamp(
      [
        { type: 'session/created', data: { title: 't' } },
        turnStart(1),
        prompt('hello'),
        ...step(1, 1),
        say(1, 1, 'Hi'),
        say(1, 1, ' there'),
        say(1, 1, '!'),
        ...endStep(1, 1),
        prompt('steer'),
        turnEnd(1),
      ],
      's',
    )
    const pushes = pushesPerEvent(events)
    expect(pushes.reduce((a, b) => a + b)).toBe(3)
    expect(pushes[1]).toBe(1)
    expect(pushes[2]).toBe(1)
    expect(pushes.at(-1)).toBe(1)
  })

  test('does not push on a turn end without a draft', () => {
    for (const text of [undefined, ' \n\t ']) {
      const events = stamp(
        [
          turnStart(1),
          prompt('p'),
          ...step(1, 1),
          ...(text === undefined ? [] : [say(1, 1, text)]),
          ...endStep(1, 1),
          turnEnd(1, 'aborted'),
        ],
        's',
      )
      expect(pushesPerEvent(events).at(-1)).toBe(0)
    }
  })

  test('pushes at most three times per turn on 500 generated logs', () => {
    fc.assert(
      fc.property(arbSessionLog(), (log) => {
        const events = stamp(log, 's')
        const pushes = pushesPerEvent(events)
        let perTurn = 0
        for (const [i, event] of events.entries()) {
          if (event.type === 'turn/start') perTurn = 0
          perTurn += pushes[i]!
          if (perTurn > 3) throw new Error(`${perTurn} pushes in one turn`)
        }
      }),
      { seed: SEED, numRuns: 500 },
    )
  })
})

describe('turn outline on generated logs', () => {
  test('equals a reading of the whole texts, with turn numbers strictly increasing', () => {
    fc.assert(
      fc.property(arbSessionLog(), (log) => {
        const events = stamp(log, 's')
        const outline = outlineOf(events)
        expect(outline).toEqual(referenceOutline(events))
        for (const entry of outline) TurnOutlineEntry.parse(entry)
        for (let i = 1; i < outline.length; i++)
          expect(outline[i]!.turn).toBeGreaterThan(outline[i - 1]!.turn)
      }),
      { seed: SEED + 1, numRuns: 500 },
    )
  })

  test('a prefix cached through structured clone, then the rest, equals the whole replay', () => {
    fc.assert(
      fc.property(arbSessionLog(), fc.nat(), (log, at) => {
        const events = stamp(log, 's')
        const split = at % (events.length + 1)
        const cached = structuredClone(replay(turnOutline, events.slice(0, split)))
        expect(replay(turnOutline, events.slice(split), cached)).toEqual(replay(turnOutline, events))
      }),
      { seed: SEED + 2, numRuns: 500 },
    )
  })
})

/** Freezes a state and every array and entry in it, so that patching any of them throws. */
function deepFreeze(state: OutlineState): OutlineState {
  for (const chunk of state.entries.chunks) {
    for (const entry of chunk ?? []) Object.freeze(entry)
    Object.freeze(chunk)
  }
  Object.freeze(state.entries.chunks)
  Object.freeze(state.entries)
  if (state.open) Object.freeze(state.open)
  return Object.freeze(state)
}

/** `events` cut at the given points (taken modulo its length). */
function batchesOf(events: readonly StoredEvent[], cuts: readonly number[]): StoredEvent[][] {
  const bounds = [...new Set(cuts.map((c) => c % (events.length + 1)))].sort((a, b) => a - b)
  const batches: StoredEvent[][] = []
  let from = 0
  for (const to of [...bounds, events.length]) {
    batches.push(events.slice(from, to))
    from = to
  }
  return batches
}

/**
 * Replays `events` in `batches` with `createOutlineReplay`, also reading the state once in the
 * middle of a batch (`peeks`), and checks each batch against the pure fold from the same state.
 * Every state given or handed out is frozen, so a patch of one throws, and compared at the end
 * with a copy taken when it was handed out.
 */
function checkTransientReplay(events: readonly StoredEvent[], cuts: number[], peeks: number[]) {
  let state = deepFreeze(turnOutline.init())
  const handedOut: Array<{ value: OutlineState; before: OutlineState }> = []
  for (const [index, batch] of batchesOf(events, cuts).entries()) {
    const pure = replay(turnOutline, batch, state)
    const replayed = createOutlineReplay(state)
    const peekAt = batch.length === 0 ? -1 : (peeks[index] ?? 0) % batch.length
    batch.forEach((event, at) => {
      replayed.add(event)
      if (at === peekAt) {
        const peeked = deepFreeze(replayed.state())
        expect(peeked).toEqual(replay(turnOutline, batch.slice(0, at + 1), state))
        handedOut.push({ value: peeked, before: structuredClone(peeked) })
      }
    })
    const next = replayed.state()
    expect(next).toEqual(pure)
    // The identity gate: a batch that changes nothing hands back the very state it was given.
    expect(next === state).toBe(pure === state)
    expect(turnOutline.view(next)).toEqual(turnOutline.view(pure))
    state = deepFreeze(next)
    handedOut.push({ value: state, before: structuredClone(state) })
  }
  for (const { value, before } of handedOut) expect(value).toEqual(before)
  expect(state).toEqual(replay(turnOutline, events))
}

describe('turn outline replayed transiently', () => {
  test('in random batches, read mid-batch too, equals the pure fold and never changes a state it was given or handed out', () => {
    fc.assert(
      fc.property(
        arbSessionLog(),
        fc.array(fc.nat(), { maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 7 }),
        (log, cuts, peeks) => checkTransientReplay(stamp(log, 's'), cuts, peeks),
      ),
      { seed: SEED + 4, numRuns: 500 },
    )
  })

  test('over logs of more than two chunks of turns equals the pure fold, batch by batch', () => {
    fc.assert(
      fc.property(
        arbSessionLog({
          minTurns: LIST_CHUNK + 1,
          maxTurns: 3 * LIST_CHUNK,
          maxSteps: 1,
          maxMessages: 1,
          maxChunks: 2,
          maxTools: 0,
        }),
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 9 }),
        (log, cuts, peeks) => {
          const events = stamp(log, 's')
          expect(turnOutline.view(replay(turnOutline, events)).length).toBeGreaterThan(LIST_CHUNK)
          checkTransientReplay(events, cuts, peeks)
        },
      ),
      { seed: SEED + 5, numRuns: 15 },
    )
  })

  test('on a state whose earlier chunks are unloaded (a cold open) equals the pure fold and leaves them unloaded', () => {
    const turns = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, i): SessionEvent[] => {
        const turn = from + i
        return [
          turnStart(turn),
          prompt(`q${turn}`),
          ...step(turn, 1),
          say(turn, 1, `a${turn}`),
          ...endStep(turn, 1),
          turnEnd(turn),
        ]
      }).flat()
    const head = stamp(turns(1, 2 * LIST_CHUNK + 10), 's')
    const whole = replay(turnOutline, head)
    // What the store hands back on a cold open: the last two chunks loaded, the others not.
    const chunks = whole.entries.chunks.map((chunk, index, all) =>
      index < all.length - 2 ? undefined : chunk,
    )
    const cold = deepFreeze({ entries: listOfChunks(chunks), open: whole.open })
    const rest = stamp(turns(2 * LIST_CHUNK + 10, 3 * LIST_CHUNK + 20), 's', head.length + 1)
    const replayed = createOutlineReplay(cold)
    for (const event of rest) replayed.add(event)
    const next = replayed.state()
    expect(next).toEqual(replay(turnOutline, rest, cold))
    expect(next.entries.chunks[0]).toBeUndefined()
    expect(next.entries.chunks.slice(1).every((chunk) => chunk !== undefined)).toBe(true)
    expect(next.entries.length).toBe(3 * LIST_CHUNK + 19)
  })

  test('foldEvents in random batches keeps the outline the pure fold keeps', () => {
    fc.assert(
      fc.property(arbSessionLog(), fc.array(fc.nat(), { maxLength: 6 }), (log, cuts) => {
        const events = stamp(log, 's')
        let folds = initFolds()
        for (const batch of batchesOf(events, cuts)) {
          const before = deepFreeze(folds.turnOutline)
          const pure = replay(turnOutline, batch, before)
          folds = foldEvents(folds, batch).folds
          expect(folds.turnOutline).toEqual(pure)
          expect(folds.turnOutline === before).toBe(pure === before)
        }
        expect(folds.turnOutline).toEqual(replay(turnOutline, events))
      }),
      { seed: SEED + 6, numRuns: 300 },
    )
  })
})
