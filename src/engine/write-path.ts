/**
 * The engine's one write path: read → decide → commit → publish. A write reads the session's
 * state (the cache, when the session row's `rev` proves it current) and the facts its command
 * is judged on, asks the pure planner (core/write-plan, over core/decide) what the command
 * writes, stores that in the same readwrite transaction, and then publishes the new state to
 * watchers and peers. Seqs come from the session row inside the transaction, so engines sharing
 * a database never collide.
 *
 * Group commit (docs/decisions/0014): writes to one session that arrive while its transaction is
 * in flight wait in a queue (./write-queue) and then commit together, in one readwrite
 * transaction: each is decided in arrival order on the state its predecessors left, a refused
 * one fails alone, and every call resolves only once the transaction holding it committed.
 *
 * Every batch takes one commit path. Its first strategy is the guess: with a current cache, the
 * batch is planned on the cache and the facts each write's `expect` predicts, and committed in
 * one round trip (the checking reads, then the writes right behind them). The careful read is
 * its retry, and the only strategy when a guess cannot be made: the session row and the facts
 * read first, then the plan on what they say.
 *
 * @example
 *   const { answer: receipt } = await writes.write(sessionId, {
 *     scope: 'inbox',
 *     readFacts: () => getReceipt(db, inputId),
 *     command: (stored) => ({ type: 'cancel', inputId, stored }),
 *   })
 */
import type { Answers, Command, CommandOf } from '../core/decide'
import { DEFAULT_MATERIALIZE, type MaterializePolicy } from '../core/materialize'
import {
  type BatchJudge,
  type BatchPlan,
  mergedDecision,
  type PlanOutcome,
  planBatch,
} from '../core/write-plan'
import type { InputReceipt } from '../schema/inputs'
import type { SessionMessage } from '../schema/messages'
import type { SessionlineDb, SessionRow } from '../store/db'
import { addRows, getSessionRow, inInboxWrite, inWrite, isConstraintError } from '../store/transactions'
import { readHintAfter } from './cache/load'
import type { Notes } from './notes'
import {
  type Entry,
  notFound,
  type SessionCache,
  type Snapshot,
  sameIncarnation,
  sameVersion,
} from './session-cache'
import { createWriteQueue } from './write-queue'

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

/** Writes decided together in one transaction, at most. */
const MAX_BATCH = 256

type AnySpec = WriteSpec<Command['type'], unknown>

/** A write waiting in its session's queue. */
interface Queued {
  spec: AnySpec
  resolve: (written: Written<unknown>) => void
  reject: (error: unknown) => void
}

/**
 * A batch's plan as committed on `base`; `complete`: the plan's state is the session's whole
 * state; `siblings`: rows beside the plan's whose branch places the commit rewrote.
 */
interface Committed {
  base: Snapshot
  plan: BatchPlan<SessionRow>
  complete: boolean
  siblings: readonly SessionMessage[]
}

/** Runs a function in a readwrite transaction over the tables a batch writes. */
type Transaction = typeof inWrite

const keysOf = (item: Queued) => item.spec.keys

/** What the commit strategies share: the write path's dependencies, resolved once. */
interface WriteContext {
  db: SessionlineDb
  cache: SessionCache
  notes: Notes
  now: () => number
  onRows: WritePathDeps['onRows']
  siblingsJoined: WritePathDeps['siblingsJoined']
  policy: MaterializePolicy
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
  const ctx: WriteContext = { db, cache, notes, now, onRows, siblingsJoined, policy }
  /** One queue per pinned entry and durability: a strict write never rides a relaxed commit. */
  const queue = createWriteQueue<Entry, Queued>({
    maxBatch: MAX_BATCH,
    commit: (entry, batch) => commitBatch(ctx, entry, batch),
  })

  /**
   * Runs one write and answers what the command answers; a refusal writes nothing. It commits
   * with the writes queued beside it, and resolves once that commit is done.
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
          queue.enqueue(entry, spec.durability ?? 'default', {
            spec: spec as unknown as AnySpec,
            resolve: resolve as (written: Written<unknown>) => void,
            reject,
          })
        }),
    )
  }

  return { write }
}

/**
 * Settles every write of `batch` but those deferred to the next batch, which it returns. A lone
 * write is a batch of one: the same guess in one round trip, the same careful path.
 */
async function commitBatch(ctx: WriteContext, entry: Entry, batch: Queued[]): Promise<Queued[]> {
  let outcomes: PlanOutcome<SessionRow>[]
  try {
    outcomes = await commitTogether(ctx, entry, batch)
  } catch (error) {
    if (batch.length === 1) {
      ;(batch[0] as Queued).reject(error)
      return []
    }
    // The shared transaction failed (a row or input id another engine took meanwhile, a
    // storage error): nothing of it was written. Each write runs again alone, in order, so
    // only the one at fault fails.
    for (const item of batch) await commitBatch(ctx, entry, [item])
    return []
  }
  outcomes.forEach((outcome, i) => {
    const item = batch[i] as Queued
    if ('refused' in outcome) item.reject(outcome.refused)
    else item.resolve({ answer: outcome.planned.decision.answer, wrote: outcome.planned.next !== undefined })
  })
  return batch.slice(outcomes.length)
}

/**
 * Decides the writes of `batch` one after another, each on the state the previous ones left,
 * commits them in one transaction (by the guess, else the careful read) and publishes the
 * result. A refusal is that write's outcome and changes nothing. The first write whose `keys`
 * an earlier one touched ends the batch: it and those after it wait for the next one.
 */
async function commitTogether(
  ctx: WriteContext,
  entry: Entry,
  batch: Queued[],
): Promise<PlanOutcome<SessionRow>[]> {
  await ctx.cache.load(entry)
  const inbox = batch.every((item) => item.spec.scope === 'inbox')
  const transaction: Transaction = inbox ? inInboxWrite : inWrite
  const { base, plan, complete, siblings } =
    (await guessed(ctx, entry, batch, transaction)) ?? (await careful(ctx, entry, batch, inbox, transaction))
  if (plan.plans.length > 0) published(ctx, entry, base, plan, complete, siblings)
  return plan.outcomes
}

/**
 * The guess: the batch planned on the cache and the facts each write's `expect` predicts, its
 * writes issued right behind the reads that check those predictions, and the transaction
 * aborted if the reads prove any wrong (the cache was behind, or an input or row appeared).
 * Requests of a transaction run in order, so the reads see the state before the writes.
 * Undefined when no guess can be made (a refusal is only ever answered from the stored state)
 * or it did not hold: the careful read then runs the batch.
 */
async function guessed(
  ctx: WriteContext,
  entry: Entry,
  batch: readonly Queued[],
  transaction: Transaction,
): Promise<Committed | undefined> {
  const { db, now, policy } = ctx
  const cached = entry.snap
  if (!cached || !batch.every((item) => item.spec.expect)) return undefined
  const checks: { expected: Expectation<unknown>; spec: AnySpec }[] = []
  const judge: BatchJudge<Queued, SessionRow> = {
    keys: keysOf,
    command: ({ spec }, state) => {
      const expected = spec.expect?.(state)
      if (!expected) return undefined
      checks.push({ expected, spec })
      return spec.command(expected.facts)
    },
  }
  const plan = withReadHint(cached, planBatch(cached, batch, judge, now(), policy))
  if (plan.refused || plan.undecided) return undefined
  const sessionId = entry.id
  const held = await transaction(db, async () => {
    const reads = Promise.all([
      getSessionRow(db, sessionId),
      ...checks.map(({ expected, spec }) => (expected.readFacts ?? spec.readFacts)?.()),
    ])
    const writes = plan.plans.length > 0 ? persistAll(ctx, sessionId, cached, plan, batch) : undefined
    // If we abort below, these fail with the abort; that failure is expected, not news.
    writes?.catch(() => undefined)
    const [row, ...facts] = await reads
    if (!row || !sameVersion(cached.row, row) || checks.some(({ expected }, i) => !expected.holds(facts[i])))
      throw STALE
    return (await writes) ?? []
  }).catch((error: unknown) => {
    // An input id stored meanwhile fails its add: the careful path answers replay or conflict.
    if (error === STALE || isConstraintError(error)) return false as const
    throw error
  })
  return held === false ? undefined : { base: cached, plan, complete: true, siblings: held }
}

/**
 * The careful read: the session row and the facts of every write read together, the base state
 * taken from the cache when the row proves it current (else read in the transaction), and the
 * batch planned on what was read.
 */
function careful(
  ctx: WriteContext,
  entry: Entry,
  batch: readonly Queued[],
  inbox: boolean,
  transaction: Transaction,
): Promise<Committed> {
  const { db, cache, now, policy } = ctx
  const sessionId = entry.id
  return transaction(db, async () => {
    const [row, ...facts] = await Promise.all([
      getSessionRow(db, sessionId),
      ...batch.map((item) => item.spec.readFacts?.()),
    ])
    if (!row) throw notFound(sessionId)
    const current = entry.snap
    const base =
      current && sameVersion(current.row, row)
        ? current
        : inbox
          ? await cache.inboxInTx(sessionId, row, current)
          : await cache.snapshotInTx(sessionId, row)
    const judge: BatchJudge<Queued, SessionRow> = {
      keys: keysOf,
      command: ({ spec }, _, i) => spec.command(facts[i]),
    }
    const plan = withReadHint(base, planBatch(base, batch, judge, now(), policy))
    const siblings = plan.plans.length > 0 ? await persistAll(ctx, sessionId, base, plan, batch) : []
    // An inbox read leaves the folds as cached: the state is whole only when they were current.
    return { base, plan, complete: base === current || !inbox, siblings }
  })
}

/**
 * The plan with its final row carrying the read hint it is stored with (store/read-hint.ts): the
 * pending receipts it leaves, and the transcript fold's stored version, which is this code's
 * when the batch stores the transcript and otherwise what the base row's hint said. The cache
 * keeps that row, so the next batch carries the version on.
 */
function withReadHint(base: Snapshot, plan: BatchPlan<SessionRow>): BatchPlan<SessionRow> {
  if (plan.plans.length === 0) return plan
  const next = plan.state
  return { ...plan, state: { ...next, row: { ...next.row, readHint: readHintAfter(next.row, next, base) } } }
}

/** After a commit: tells peers, moves the cache and pushes the change. */
function published(
  ctx: WriteContext,
  entry: Entry,
  base: Snapshot,
  plan: BatchPlan<SessionRow>,
  complete: boolean,
  siblings: readonly SessionMessage[],
): void {
  const { cache, notes, onRows } = ctx
  const next = plan.state
  const decision = mergedDecision(plan.plans, siblings)
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
}

/**
 * Stores the plan of one batch: the final session row and folds once, the events of all, new
 * rows and receipts added and changed ones put, in request order (an add precedes the put that
 * changes the same row or receipt later in the batch), and each writing write's `alsoStore`.
 * A batch that creates the first row under a head with rows below it also rewrites their branch
 * places; those rows are returned.
 */
async function persistAll(
  ctx: WriteContext,
  sessionId: string,
  base: Snapshot,
  plan: BatchPlan<SessionRow>,
  batch: readonly Queued[],
): Promise<SessionMessage[]> {
  const { db, cache, siblingsJoined } = ctx
  const next = plan.state
  const writes: Promise<unknown>[] = [db.sessions.put(next.row)]
  const events = plan.plans.flatMap((p) => p.decision.events)
  if (events.length > 0) writes.push(db.events.bulkAdd(events))
  const freshRows: SessionMessage[] = []
  const changedRows: SessionMessage[] = []
  const freshReceipts: InputReceipt[] = []
  const changedReceipts: InputReceipt[] = []
  for (const { decision, write } of plan.plans) {
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
  for (const i of plan.writers) {
    const alsoStore = (batch[i] as Queued).spec.alsoStore
    if (alsoStore) writes.push(alsoStore())
  }
  // Only the first row after a head move can join siblings (append never moves the head), and
  // only then is the tree read: the plain write path pays nothing.
  let siblings: Promise<SessionMessage[]> | undefined
  if (
    siblingsJoined &&
    base.folds.branching.under !== 0 &&
    plan.plans.some((p) => p.decision.createdRowIds.length > 0)
  ) {
    siblings = siblingsJoined(base.row).then((rows) =>
      rows.length > 0 ? db.messages.bulkPut(rows).then(() => rows) : rows,
    )
    writes.push(siblings)
  }
  await Promise.all(writes)
  return siblings ? await siblings : []
}
