/**
 * The engine's one write path: read → decide → commit → publish. A write reads the session's
 * state (the cache, when the session row's `rev` proves it current) and the facts its command
 * is judged on, asks the pure decider (core/decide) what the command writes, stores that in the
 * same readwrite transaction, and then publishes the new state to watchers and peers. Seqs come
 * from the session row inside the transaction, so engines sharing a database never collide.
 *
 * Group commit (docs/decisions/0014): writes to one session that arrive while its transaction is
 * in flight wait in a queue and then commit together, in one readwrite transaction: each is
 * decided in arrival order on the state its predecessors left, a refused one fails alone, and
 * every call resolves only once the transaction holding it committed.
 *
 * @example
 *   const { answer: receipt } = await writes.write(sessionId, {
 *     scope: 'inbox',
 *     readFacts: () => getReceipt(db, inputId),
 *     command: (stored) => ({ type: 'cancel', inputId, stored }),
 *   })
 */
import {
  type Answers,
  type Command,
  type CommandOf,
  type Decision,
  decide,
  type SessionState,
} from '../core/decide'
import {
  DEFAULT_MATERIALIZE,
  type LaggingRow,
  type MaterializePolicy,
  materialize,
} from '../core/materialize'
import { isSessionlineError } from '../schema/errors'
import type { InputReceipt } from '../schema/inputs'
import type { SessionMessage } from '../schema/messages'
import type { SessionlineDb, SessionRow } from '../store/db'
import { addRows, getSessionRow, inInboxWrite, inWrite, isConstraintError } from '../store/transactions'
import type { Notes } from './notes'
import {
  type Entry,
  notFound,
  type SessionCache,
  type Snapshot,
  sameIncarnation,
  sameVersion,
} from './session-cache'

/** One write: its command, the facts it is judged on, and what those are when the cache is current. */
export interface WriteSpec<K extends Command['type'], F> {
  /** `inbox` writes (admit, cancel, edit) never touch the log and lock fewer tables. */
  scope?: 'log' | 'inbox'
  /** Reads the facts the command needs besides the session's state; issued with the session row. */
  readFacts?: () => Promise<F>
  /** The command, given the facts. */
  command: (facts: F) => CommandOf<K>
  /** What `readFacts` should find if the cache is current, and how to tell it did; none: no guessing. */
  expect?: (cached: Snapshot) => Expectation<F> | undefined
  /**
   * The input and row ids `readFacts` reads about. A write whose ids an earlier write of the same
   * batch touched waits for the next batch: its facts would be read before that write.
   */
  keys?: readonly string[]
  /**
   * How durable the commit must be. Writes batch only with writes of the same durability, so a
   * strict write never shares (and never waits for less than) a relaxed commit.
   */
  durability?: 'relaxed' | 'strict'
  /**
   * More to store in the same transaction when the command writes (an admit's attachment bytes);
   * a refusal or a replay stores none of it. Must await nothing but IndexedDB.
   */
  alsoStore?: () => Promise<unknown>
}

export interface Expectation<F> {
  facts: F
  /** The reads a guess needs, when fewer than the careful path's (default: `readFacts`). */
  readFacts?: () => Promise<F>
  holds: (actual: F) => boolean
}

/** Thrown inside a speculative write to abort it when the cache proved to be behind. */
const STALE: unique symbol = Symbol('stale cache')

/** The decider's view of a cached snapshot. */
const stateOf = (snap: Snapshot): SessionState => ({
  sessionId: snap.row.id,
  source: snap.row.source,
  headSeq: snap.row.headSeq,
  nextInputSeq: snap.row.nextInputSeq,
  folds: snap.folds,
  pending: snap.pending,
})

/** The row of a session after a write at `at`: its counters, a new `updatedAt` and `rev`, its lagging rows. */
function bumpRow(row: SessionRow, at: number, state: SessionState, lagging: LaggingRow[]): SessionRow {
  const next: SessionRow = {
    ...row,
    headSeq: state.headSeq,
    nextInputSeq: state.nextInputSeq,
    updatedAt: at,
    rev: row.rev + 1,
  }
  // No field at all when nothing lags: the row is then stored exactly as before streaming began.
  if (lagging.length > 0) next.lagging = lagging
  else delete next.lagging
  return next
}

export interface WritePathDeps {
  db: SessionlineDb
  cache: SessionCache
  notes: Notes
  now: () => number
  /** When a streaming row is rewritten in `messages` (docs/decisions/0021). */
  materialize?: MaterializePolicy
  /** Told of every commit's rows after it is published (the search index follows them). */
  onRows?: (sessionId: string, rows: readonly SessionMessage[], fromHead: number, toHead: number) => void
  /**
   * Inside the transaction, when a write creates a row under a head that already has rows below
   * it: those rows with their branch places rewritten (engine/history `siblingsJoined`).
   */
  siblingsJoined?: (row: SessionRow) => Promise<SessionMessage[]>
}

/** What a write answers, and whether it wrote anything (a replay or a no-op writes nothing). */
export interface Written<T> {
  answer: T
  wrote: boolean
}

/** A decision made and the snapshot it moves to (none: nothing to write). */
interface Planned<T> {
  decision: Decision<T>
  next?: Snapshot
  /** The rows of `decision.rows` to store now; the others lag the log (`next.row.lagging`). */
  write?: SessionMessage[]
  /** The write's own extra storing (`WriteSpec.alsoStore`), when the decision writes. */
  alsoStore?: () => Promise<unknown>
}

/** Writes decided together in one transaction, at most. */
const MAX_BATCH = 256

type AnySpec = WriteSpec<Command['type'], unknown>

/** A write waiting in its session's queue. */
interface Queued {
  spec: AnySpec
  resolve: (written: Written<unknown>) => void
  reject: (error: unknown) => void
}

interface Queue {
  items: Queued[]
  /** A batch of this queue is being committed; new writes wait for the next. */
  running: boolean
}

type Outcome = { planned: Planned<unknown> } | { error: unknown }

/** One batch's decisions as one, for publishing: rows and receipts by id, the last version. */
function merged(plans: readonly Planned<unknown>[], also: readonly SessionMessage[] = []): Decision<unknown> {
  const rows = new Map<string, SessionMessage>(also.map((row) => [row.id, row]))
  const receipts = new Map<string, InputReceipt>()
  for (const { decision } of plans) {
    for (const row of decision.rows) rows.set(row.id, row)
    for (const receipt of decision.receipts) receipts.set(receipt.id, receipt)
  }
  return {
    answer: undefined,
    events: plans.flatMap((p) => p.decision.events),
    rows: [...rows.values()].sort((a, b) => a.seq - b.seq),
    receipts: [...receipts.values()],
    newReceipts: false,
    createdRowIds: plans.flatMap((p) => p.decision.createdRowIds),
  }
}

export function createWritePath({
  db,
  cache,
  notes,
  siblingsJoined,
  now,
  onRows,
  materialize: policy = DEFAULT_MATERIALIZE,
}: WritePathDeps) {
  /**
   * Runs one write and answers what the command answers; a refusal writes nothing.
   *
   * With a current cache, the write goes in one round trip: the decision is made from the cache
   * and what `expect` says the reads will find, and its writes are issued right behind the reads.
   * Requests of a transaction run in order, so the reads see the state before the writes; if
   * they show the cache was behind (or an input or row the decision did not expect), the
   * transaction is aborted, nothing is written, and the write runs again the careful way.
   */
  function write<K extends Command['type'], F = undefined>(
    sessionId: string,
    spec: WriteSpec<K, F>,
  ): Promise<Written<Answers[K]>> {
    // Pinned until the write settles: the queue's entry is the one every later call uses.
    return cache.use(
      sessionId,
      (entry) =>
        new Promise<Written<Answers[K]>>((resolve, reject) => {
          enqueue(entry, {
            spec: spec as unknown as AnySpec,
            resolve: resolve as (written: Written<unknown>) => void,
            reject,
          })
        }),
    )
  }

  /** The queues of pinned entries, one per durability (a strict write never rides a relaxed commit). */
  const queues = new WeakMap<Entry, Map<string, Queue>>()

  function enqueue(entry: Entry, item: Queued): void {
    const key = item.spec.durability ?? 'default'
    let byDurability = queues.get(entry)
    if (!byDurability) {
      byDurability = new Map()
      queues.set(entry, byDurability)
    }
    let queue = byDurability.get(key)
    if (!queue) {
      queue = { items: [], running: false }
      byDurability.set(key, queue)
    }
    queue.items.push(item)
    if (queue.running) return
    queue.running = true
    void drain(entry, queue)
  }

  /** Commits the queue batch by batch, in arrival order, until it is empty. */
  async function drain(entry: Entry, queue: Queue): Promise<void> {
    // Writes issued in the same tick as the first one share its transaction.
    await Promise.resolve()
    try {
      while (queue.items.length > 0) {
        const batch = queue.items.splice(0, MAX_BATCH)
        const deferred = await commitBatch(entry, batch)
        queue.items.unshift(...deferred)
      }
    } finally {
      queue.running = false
    }
  }

  /**
   * Settles every write of `batch` but those deferred to the next batch, which it returns. A lone
   * write is a batch of one: the same guess in one round trip, the same careful path.
   */
  async function commitBatch(entry: Entry, batch: Queued[]): Promise<Queued[]> {
    let together: Awaited<ReturnType<typeof commitTogether>>
    try {
      together = await commitTogether(entry, batch)
    } catch (error) {
      if (batch.length === 1) {
        ;(batch[0] as Queued).reject(error)
        return []
      }
      // The shared transaction failed (a row or input id another engine took meanwhile, a
      // storage error): nothing of it was written. Each write runs again alone, in order, so
      // only the one at fault fails.
      for (const item of batch) await commitBatch(entry, [item])
      return []
    }
    together.outcomes.forEach((outcome, i) => {
      const item = batch[i] as Queued
      if ('error' in outcome) item.reject(outcome.error)
      else
        item.resolve({ answer: outcome.planned.decision.answer, wrote: outcome.planned.next !== undefined })
    })
    return batch.slice(together.outcomes.length)
  }

  /**
   * Decides the writes of `batch` one after another, each on the state the previous ones left,
   * and commits them in one transaction; the facts of all are read together with the session
   * row. A refusal is that write's outcome and changes nothing. The first write whose `keys`
   * an earlier one touched ends the batch: it and those after it wait for the next one.
   */
  async function commitTogether(entry: Entry, batch: Queued[]): Promise<{ outcomes: Outcome[] }> {
    const sessionId = entry.id
    await cache.load(entry)
    const cached = entry.snap
    if (cached && batch.every((item) => item.spec.expect)) {
      const guessed = await commitGuessed(entry, cached, batch)
      if (guessed) return guessed
    }
    const scope = batch.every((item) => item.spec.scope === 'inbox') ? 'inbox' : 'log'
    const transaction = scope === 'inbox' ? inInboxWrite : inWrite
    const committed = await transaction(db, async () => {
      const [row, ...facts] = await Promise.all([
        getSessionRow(db, sessionId),
        ...batch.map((item) => item.spec.readFacts?.()),
      ])
      if (!row) throw notFound(sessionId)
      const current = entry.snap
      const base =
        current && sameVersion(current.row, row)
          ? current
          : scope === 'inbox'
            ? await cache.inboxInTx(sessionId, row, current)
            : await cache.snapshotInTx(sessionId, row)
      const { state, outcomes, plans } = planInOrder(base, batch, (_, i) => ({ facts: facts[i] }), 'answer')!
      const siblings = plans.length > 0 ? await persistAll(sessionId, base, state, plans) : []
      return { base, state, plans, outcomes, siblings, complete: base === current || scope === 'log' }
    })
    const { base, state, plans, outcomes, siblings, complete } = committed
    if (plans.length > 0) published(entry, base, { decision: merged(plans, siblings), next: state }, complete)
    return { outcomes }
  }

  /**
   * The batch in one round trip: every write decided on the
   * cache and the facts its `expect` predicts, the writes issued right behind the reads, and
   * the transaction aborted if the reads prove any guess wrong. Undefined when a guess cannot be
   * made (a refusal is only ever answered from the stored state) or did not hold: the careful
   * path then runs the batch.
   */
  async function commitGuessed(
    entry: Entry,
    cached: Snapshot,
    batch: readonly Queued[],
  ): Promise<{ outcomes: Outcome[] } | undefined> {
    const sessionId = entry.id
    const checks: { expected: Expectation<unknown>; spec: AnySpec }[] = []
    const guessed = planInOrder(
      cached,
      batch,
      (item, _, state) => {
        const expected = item.spec.expect?.(state)
        if (!expected) return undefined
        checks.push({ expected, spec: item.spec })
        return { facts: expected.facts }
      },
      'give up',
    )
    if (!guessed) return undefined
    const { state, outcomes, plans } = guessed
    const scope = batch.every((item) => item.spec.scope === 'inbox') ? 'inbox' : 'log'
    const transaction = scope === 'inbox' ? inInboxWrite : inWrite
    const held = await transaction(db, async () => {
      const reads = Promise.all([
        getSessionRow(db, sessionId),
        ...checks.map(({ expected, spec }) => (expected.readFacts ?? spec.readFacts)?.()),
      ])
      const writes = plans.length > 0 ? persistAll(sessionId, cached, state, plans) : undefined
      // If we abort below, these fail with the abort; that failure is expected, not news.
      writes?.catch(() => undefined)
      const [row, ...facts] = await reads
      if (
        !row ||
        !sameVersion(cached.row, row) ||
        checks.some(({ expected }, i) => !expected.holds(facts[i]))
      )
        throw STALE
      return (await writes) ?? []
    }).catch((error: unknown) => {
      // An input id stored meanwhile fails its add: the careful path answers replay or conflict.
      if (error === STALE || isConstraintError(error)) return false as const
      throw error
    })
    if (held === false) return undefined
    if (plans.length > 0) published(entry, cached, { decision: merged(plans, held), next: state }, true)
    return { outcomes }
  }

  /**
   * Decides the writes of `batch` in order, each on the state the previous ones left and on the
   * facts `factsOf` gives it, and stops before the first whose `keys` an earlier one touched (its
   * facts were read before that write). A refusal is that write's outcome (`answer`), or ends
   * the planning with nothing (`give up`: a guess never answers a refusal), as does a write
   * `factsOf` has no facts for.
   */
  function planInOrder(
    base: Snapshot,
    batch: readonly Queued[],
    factsOf: (item: Queued, index: number, state: Snapshot) => { facts: unknown } | undefined,
    refusal: 'answer' | 'give up',
  ): { state: Snapshot; outcomes: Outcome[]; plans: Planned<unknown>[] } | undefined {
    let state = base
    const touched = new Set<string>()
    const outcomes: Outcome[] = []
    const plans: Planned<unknown>[] = []
    for (const [i, item] of batch.entries()) {
      if (item.spec.keys?.some((key) => touched.has(key))) break
      const given = factsOf(item, i, state)
      if (!given) return undefined
      let planned: Planned<unknown>
      try {
        planned = plan(state, item.spec.command(given.facts))
      } catch (error) {
        if (!isSessionlineError(error)) throw error
        if (refusal === 'give up') return undefined
        outcomes.push({ error })
        continue
      }
      outcomes.push({ planned })
      if (!planned.next) continue
      if (item.spec.alsoStore) planned.alsoStore = item.spec.alsoStore
      plans.push(planned)
      state = planned.next
      for (const receipt of planned.decision.receipts) touched.add(receipt.id)
      for (const id of planned.decision.createdRowIds) touched.add(id)
    }
    return { state, outcomes, plans }
  }

  /** Decides `command` on `base` now; throws the refusal. */
  function plan<K extends Command['type']>(base: Snapshot, command: CommandOf<K>): Planned<Answers[K]> {
    const at = now()
    const decision = decide(stateOf(base), command, at)
    if (isSessionlineError(decision)) throw decision
    if (!decision.next) return { decision }
    const stored = materialize(
      base.row.lagging ?? [],
      { events: decision.events, rows: decision.rows, created: decision.createdRowIds },
      decision.next.folds.transcript.open,
      base.row.headSeq,
      policy,
    )
    const next: Snapshot = {
      row: bumpRow(base.row, at, decision.next, stored.lagging),
      folds: decision.next.folds,
      pending: decision.next.pending,
    }
    return { decision, next, write: stored.write }
  }

  /** After a commit: tells peers, moves the cache and pushes the change; returns the answer. */
  function published<T>(entry: Entry, base: Snapshot, planned: Planned<T>, complete: boolean): Written<T> {
    const { decision, next } = planned
    if (!next) return { answer: decision.answer, wrote: false }
    notes.post({ sessionId: entry.id, rev: next.row.rev })
    const change = { events: decision.events, rows: decision.rows, inputs: decision.receipts }
    const current = entry.snap
    if (current && sameVersion(current.row, base.row) && complete) cache.advance(entry, next, change)
    else if (current && (!sameIncarnation(current.row, next.row) || current.row.rev < next.row.rev)) {
      // The cache had missed another engine's commits: watchers get those and ours from the
      // database, in order; with nobody watching, a complete new state is all that matters.
      if (entry.feed.size > 0 || !complete) void cache.catchUp(entry)
      else cache.advance(entry, next, change)
    }
    onRows?.(entry.id, change.rows, base.row.headSeq, next.row.headSeq)
    return { answer: decision.answer, wrote: true }
  }

  /**
   * Stores the decisions of one batch: the final session row and folds once, the events of all,
   * new rows and receipts added and changed ones put, in request order (an add precedes the put
   * that changes the same row or receipt later in the batch). A batch that creates the first row
   * under a head with rows below it also rewrites their branch places; those rows are returned.
   */
  async function persistAll(
    sessionId: string,
    base: Snapshot,
    next: Snapshot,
    plans: readonly Planned<unknown>[],
  ): Promise<SessionMessage[]> {
    const writes: Promise<unknown>[] = [db.sessions.put(next.row)]
    const events = plans.flatMap((p) => p.decision.events)
    if (events.length > 0) writes.push(db.events.bulkAdd(events))
    const freshRows: SessionMessage[] = []
    const changedRows: SessionMessage[] = []
    const freshReceipts: InputReceipt[] = []
    const changedReceipts: InputReceipt[] = []
    for (const { decision, write } of plans) {
      const created = new Set(decision.createdRowIds)
      for (const row of write ?? []) (created.has(row.id) ? freshRows : changedRows).push(row)
      ;(decision.newReceipts ? freshReceipts : changedReceipts).push(...decision.receipts)
    }
    if (freshRows.length > 0) writes.push(addRows(db, freshRows))
    if (changedRows.length > 0) writes.push(db.messages.bulkPut(changedRows))
    if (freshReceipts.length > 0) writes.push(db.inputs.bulkAdd(freshReceipts))
    if (changedReceipts.length > 0) writes.push(db.inputs.bulkPut(changedReceipts))
    const states = cache.putFolds(sessionId, next.row.headSeq, next.folds, base.folds)
    if (states) writes.push(states)
    for (const { alsoStore } of plans) if (alsoStore) writes.push(alsoStore())
    // Only the first row after a head move can join siblings (append never moves the head), and
    // only then is the tree read: the plain write path pays nothing.
    let siblings: Promise<SessionMessage[]> | undefined
    if (
      siblingsJoined &&
      base.folds.branching.under !== 0 &&
      plans.some((p) => p.decision.createdRowIds.length > 0)
    ) {
      siblings = siblingsJoined(base.row).then((rows) =>
        rows.length > 0 ? db.messages.bulkPut(rows).then(() => rows) : rows,
      )
      writes.push(siblings)
    }
    await Promise.all(writes)
    return siblings ? await siblings : []
  }

  return { write }
}
