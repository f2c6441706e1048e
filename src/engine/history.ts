/**
 * The history verbs on the engine (docs/architecture.md §11, docs/decisions/0033): read → decide → commit →
 * publish, like every write, in one readwrite transaction of their own. Besides the events the
 * decider (core/history-decide) gives, a verb rewrites in the same transaction the stored rows
 * whose visibility the head move changes, and the `branch` of the siblings of a row it creates;
 * a refusal writes nothing.
 *
 * Each engine keeps the history tree of the sessions it touched, with the head seq it reflects,
 * and brings it up to date from the log inside the transaction (a cold engine folds the log once).
 * The tree is a persistent value, so a refused decision leaves the kept one as it was.
 *
 * Watchers are sent the rewritten rows and `reset` (a head move changes which rows a window
 * holds, not only their contents); other engines catch up from the log and reset likewise.
 *
 * @example
 *   const history = createHistory({ db, cache, notes, now, interrupt: runner.interrupt })
 *   const { text } = await history.verb(sessionId, async () => ({ type: 'rewind', messageId, row: await rowOf(messageId) }))
 */
import { initFolds, stampAndFold } from '../core/folds'
import { forkEvents, forkRowId } from '../core/fork'
import {
  decideHistory,
  type HistoryAnswers,
  type HistoryCommand,
  type HistoryCommandOf,
  type HistoryState,
} from '../core/history-decide'
import {
  branchOf,
  childIds,
  compactableIds,
  contextFor,
  contextIds,
  contextOfVisible,
  emptyTree,
  evolveTree,
  type HistoryTree,
  headOf,
  nodeOf,
  pathOf,
  placed,
  siblingIds,
  visibilityChanges,
  visibleIds,
} from '../core/history-tree'
import { historyOfImport, switchImported } from '../core/imported-tree'
import { type MaterializePolicy, materialize } from '../core/materialize'
import { isSessionlineError, SessionlineError } from '../schema/errors'
import type { SessionEvent } from '../schema/events'
import type { BranchesAnswer, ContextAnswer } from '../schema/history'
import type { SessionMessage } from '../schema/messages'
import type { SessionInfo, TurnOutlineEntry } from '../schema/session'
import { referAttachments } from '../store/attachments'
import { MAX_KEY, MIN_KEY, type SessionlineDb, type SessionRow, sessionInfo } from '../store/db'
import { foldRows, importedTreeOf, importedTreeRow } from '../store/imported'
import {
  addRows,
  assertInTransaction,
  eventsBetween,
  getSessionRow,
  inRead,
  inWrite,
  resumeInTransaction,
  rowsFrom,
} from '../store/transactions'
import { currentRows, readHintAfter } from './cache/load'
import { importedAt } from './importing'
import type { Notes } from './notes'
import { type Entry as CacheEntry, notFound, type SessionCache, type Snapshot } from './session-cache'

export interface HistoryDeps {
  db: SessionlineDb
  cache: SessionCache
  notes: Notes
  now: () => number
  materialize: MaterializePolicy
  /** Stops a turn the built-in runner is driving, before a verb changes the history under it. */
  interrupt: (sessionId: string) => Promise<void>
  /** Told of every commit's rows after it is published (the search index follows them). */
  onRows?: (sessionId: string, rows: readonly SessionMessage[], fromHead: number, toHead: number) => void
}

/** A kept tree: the head seq of the log it reflects, and the session it belongs to. */
interface KeptTree {
  headSeq: number
  createdAt: number
  tree: HistoryTree
}

export function createHistory({
  db,
  cache,
  notes,
  now,
  materialize: policy,
  interrupt,
  onRows,
}: HistoryDeps) {
  const trees = new Map<string, KeptTree>()

  /**
   * Inside a transaction: the session's tree at the head its row names. Not an async function:
   * when the kept tree is current it answers with the zone's own promise, since awaiting one
   * that no IndexedDB request settles would leave the transaction (see `verb`).
   */
  function treeOf(row: SessionRow): Promise<HistoryTree> {
    const kept = trees.get(row.id)
    const from =
      kept && kept.createdAt === row.createdAt && kept.headSeq <= row.headSeq
        ? kept
        : { headSeq: 0, createdAt: row.createdAt, tree: emptyTree() }
    if (from.headSeq >= row.headSeq) return Promise.resolve(from.tree)
    return eventsBetween(db, row.id, from.headSeq, row.headSeq).then((events) => {
      let tree = from.tree
      for (const event of events) tree = evolveTree(tree, event)
      trees.set(row.id, { headSeq: row.headSeq, createdAt: row.createdAt, tree })
      return tree
    })
  }

  /**
   * Runs one history verb: `command` builds it from the state and the facts it reads inside the
   * transaction. A running turn of the built-in runner is stopped first. `command` answers at
   * once when it needs no facts; when it reads them, only through IndexedDB requests.
   */
  function verb<K extends HistoryCommand['type']>(
    sessionId: string,
    command: (state: HistoryState) => HistoryCommandOf<K> | Promise<HistoryCommandOf<K>>,
  ): Promise<HistoryAnswers[K]> {
    return cache.use(sessionId, async (entry) => {
      await cache.load(entry)
      if (entry.deleted || !entry.snap) throw notFound(sessionId)
      return verbIn(entry, sessionId, command)
    })
  }

  /**
   * `switchBranch`: on a native session the verb above; on an imported one whose file kept a
   * tree, the stored head moves (docs/decisions/0037) in one transaction with the rows whose
   * visibility, branch place or turn that changes and the folds derived from them. An imported
   * session without a tree is refused `invalid_state`, as every verb refuses it.
   */
  function switchBranch(sessionId: string, messageId: string): Promise<{ head: string | null }> {
    const command = () => ({ type: 'switchBranch' as const, messageId })
    return cache.use(sessionId, async (entry) => {
      await cache.load(entry)
      if (entry.deleted || !entry.snap) throw notFound(sessionId)
      if (entry.snap.row.source === 'native') return verbIn<'switchBranch'>(entry, sessionId, command)
      const switched = await inWrite(db, async () => {
        const row = await getSessionRow(db, sessionId)
        if (!row) throw notFound(sessionId)
        const tree = row.source === 'native' ? undefined : await importedTreeOf(db, sessionId)
        if (!tree) {
          // Native again (deleted and created meanwhile) or a file without a tree: the verb decides.
          return undefined
        }
        // Every row, hidden ones too: turns and usage are derived from all of them.
        const rows = await db.messages
          .where('[sessionId+seq]')
          .between([sessionId, MIN_KEY], [sessionId, MAX_KEY])
          .toArray()
        const roles = new Map(rows.map((r) => [r.id, r.role]))
        const { head, changed } = switchImported(
          tree,
          historyOfImport(tree, (id) => roles.get(id)),
          sessionId,
          messageId,
        )
        if (!changed) return { head, rev: undefined }
        const placed = importedAt(rows, tree, head)
        const nextRow: SessionRow = { ...row, updatedAt: now(), rev: row.rev + 1 }
        assertInTransaction('switchBranch on an imported tree')
        await Promise.all([
          db.sessions.put(nextRow),
          placed.changed.length > 0 ? db.messages.bulkPut(placed.changed) : undefined,
          db.projections.bulkPut([
            ...foldRows(sessionId, row.headSeq, placed.folds),
            importedTreeRow(sessionId, { ...tree, head }, row.headSeq),
          ]),
        ])
        return { head, rev: nextRow.rev, rows: placed.changed, headSeq: row.headSeq }
      })
      if (switched === undefined) return verbIn<'switchBranch'>(entry, sessionId, command)
      if (switched.rev !== undefined) {
        notes.post({ sessionId, rev: switched.rev })
        void cache.catchUp(entry)
        onRows?.(sessionId, switched.rows, switched.headSeq, switched.headSeq)
      }
      return { head: switched.head }
    })
  }

  function verbIn<K extends HistoryCommand['type']>(
    entry: CacheEntry,
    sessionId: string,
    command: (state: HistoryState) => HistoryCommandOf<K> | Promise<HistoryCommandOf<K>>,
  ): Promise<HistoryAnswers[K]> {
    return (async () => {
      if (entry.snap!.folds.transcript.openTurn !== null) await interrupt(sessionId)
      const committed = await inWrite(db, async () => {
        const row = await getSessionRow(db, sessionId)
        if (!row) throw notFound(sessionId)
        const current = entry.snap
        const base =
          current && current.row.rev === row.rev ? current : await cache.snapshotInTx(sessionId, row)
        const tree = await treeOf(row)
        const at = now()
        const state: HistoryState = {
          sessionId,
          source: row.source,
          headSeq: row.headSeq,
          nextInputSeq: row.nextInputSeq,
          folds: base.folds,
          pending: base.pending,
          tree,
        }
        // Awaited only when it reads facts: awaiting a promise that no IndexedDB request settles
        // leaves Dexie's transaction zone, and the writes after it would run outside the
        // transaction (the racing-verbs property caught two commits on one seq that way).
        // (A thenable check: inside the zone, `Promise` is Dexie's, not the async function's.)
        const made = command(state)
        const decision = decideHistory(state, 'then' in made ? await resumeInTransaction(made) : made, at)
        if (isSessionlineError(decision)) throw decision
        const next = decision.next
        if (!next) return { answer: decision.answer }
        // Rows the verb changes without an event naming them: visibility, and siblings' places.
        const visibility = new Map(visibilityChanges(tree, next.tree).map((c) => [c.id, c.visibility]))
        const siblings = new Set<string>()
        for (const id of decision.createdRowIds) for (const s of siblingIds(next.tree, id)) siblings.add(s)
        const stored = materialize(
          row.lagging ?? [],
          { events: decision.events, rows: decision.rows, created: decision.createdRowIds },
          next.folds.transcript.open,
          row.headSeq,
          policy,
        )
        const own = new Set(decision.rows.map((r) => r.id))
        // Every row rewritten gets its branch place anew too (a row the write path created under
        // a head with children learns its place here, at the next verb that touches it).
        const place = (r: SessionMessage) => placed(r, visibility.get(r.id), branchOf(next.tree, r.id))
        const written = stored.write.map(place)
        const others = [...new Set([...visibility.keys(), ...siblings])].filter((id) => !own.has(id))
        const read = others.length > 0 ? await db.messages.bulkGet(others) : []
        const rewritten: SessionMessage[] = []
        for (const r of read) {
          if (r === undefined) continue
          const p = place(r)
          if (p !== r) rewritten.push(p)
        }
        const created = new Set(decision.createdRowIds)
        const nextRow: SessionRow = {
          ...row,
          headSeq: next.headSeq,
          nextInputSeq: next.nextInputSeq,
          updatedAt: at,
          rev: row.rev + 1,
        }
        if (stored.lagging.length > 0) nextRow.lagging = stored.lagging
        else delete nextRow.lagging
        nextRow.readHint = readHintAfter(nextRow, next, { folds: base.folds, row })
        const fresh = written.filter((r) => created.has(r.id))
        const changed = [...written.filter((r) => !created.has(r.id)), ...rewritten]
        assertInTransaction(`history verb ${decision.events.at(-1)?.type ?? ''}`)
        await Promise.all([
          db.sessions.put(nextRow),
          db.events.bulkAdd(decision.events),
          fresh.length > 0 ? addRows(db, fresh) : undefined,
          changed.length > 0 ? db.messages.bulkPut(changed) : undefined,
          decision.receipts.length > 0
            ? decision.newReceipts
              ? db.inputs.bulkAdd(decision.receipts)
              : db.inputs.bulkPut(decision.receipts)
            : undefined,
          cache.putFolds(sessionId, next.headSeq, next.folds, base.folds),
        ])
        const snap: Snapshot = { row: nextRow, folds: next.folds, pending: next.pending }
        const rows = [...fresh, ...changed].sort((a, b) => a.seq - b.seq)
        return { answer: decision.answer, base, snap, tree: next.tree, rows, decision }
      })
      if (!('snap' in committed) || committed.snap === undefined) return committed.answer
      const { base, snap, rows, decision } = committed
      trees.set(sessionId, { headSeq: snap.row.headSeq, createdAt: snap.row.createdAt, tree: committed.tree })
      notes.post({ sessionId, rev: snap.row.rev })
      const change = { events: decision.events, rows, inputs: decision.receipts, reset: true }
      if (entry.snap?.row.rev === base.row.rev) cache.advance(entry, snap, change)
      else void cache.catchUp(entry)
      onRows?.(sessionId, rows, base.row.headSeq, snap.row.headSeq)
      return committed.answer
    })()
  }

  /**
   * Row `messageId` and its siblings in creation order: from the log's tree for a native
   * session, from the stored tree for an imported one (an import without a tree: the row alone).
   * Refused `not_found` for a row the session does not hold.
   */
  async function branches(sessionId: string, messageId: string): Promise<BranchesAnswer> {
    return inRead(db, async () => {
      const row = await getSessionRow(db, sessionId)
      if (!row) throw notFound(sessionId)
      const missing = () =>
        new SessionlineError(
          'not_found',
          `no row ${JSON.stringify(messageId)} in session ${JSON.stringify(sessionId)}`,
          { sessionId, messageId },
        )
      if (row.source === 'native') {
        const ids = siblingIds(await treeOf(row), messageId)
        if (ids.length === 0) throw missing()
        return { ids }
      }
      const [stored, message] = await Promise.all([importedTreeOf(db, sessionId), db.messages.get(messageId)])
      if (message?.sessionId !== sessionId) throw missing()
      if (!stored) return { ids: [messageId] }
      const ids = siblingIds(
        historyOfImport(stored, () => undefined),
        messageId,
      )
      return { ids: ids.length > 0 ? ids : [messageId] }
    })
  }

  /** What the model gets at the next step: `contextFor` at the stored head, over the stored rows. */
  async function context(sessionId: string): Promise<ContextAnswer> {
    return inRead(db, async () => {
      const row = await getSessionRow(db, sessionId)
      if (!row) throw notFound(sessionId)
      if (row.source !== 'native') {
        // An import derived its visibility from its own tree (docs/architecture.md §8), without a log.
        return { rows: contextOfVisible(await rowsFrom(db, sessionId, 1, undefined, false), false) }
      }
      const tree = await treeOf(row)
      const ids = contextIds(tree)
      const stored = (await db.messages.bulkGet(ids)).filter((r): r is SessionMessage => r !== undefined)
      // Streaming rows may lag the log in storage (docs/decisions/0021): read them whole.
      const whole = row.lagging ? await currentRows(db, row, stored) : stored
      const byId = new Map(whole.map((r) => [r.id, r]))
      return { rows: contextFor(tree, (id) => byId.get(id)) }
    })
  }

  /**
   * What a summary the provider writes is written from (docs/decisions/0033, amendment): the
   * head it is for, the row it will replace through (the last compactable row at or below
   * `throughSeq`), and the context up to that row (the path's last summary first, as the model
   * gets it). Read in one transaction; nothing is written.
   */
  async function compactionSource(
    sessionId: string,
    throughSeq: number | undefined,
  ): Promise<{ expectedHead: string | null; throughId: string | null; rows: SessionMessage[] }> {
    return inRead(db, async () => {
      const row = await getSessionRow(db, sessionId)
      if (!row) throw notFound(sessionId)
      if (row.source !== 'native') {
        throw new SessionlineError(
          'invalid_state',
          `session ${JSON.stringify(sessionId)} was imported from ${row.source}: imported sessions are read-only`,
          { sessionId, source: row.source },
        )
      }
      const tree = await treeOf(row)
      const expectedHead = headOf(tree)
      if (expectedHead === null) {
        throw new SessionlineError('invalid_state', 'nothing to compact: the path is empty', { sessionId })
      }
      const candidates = compactableIds(tree).filter(
        (id) => throughSeq === undefined || nodeOf(tree, id)!.seq <= throughSeq,
      )
      const throughId = candidates[candidates.length - 1]
      if (throughId === undefined) {
        throw new SessionlineError(
          'invalid_input',
          `no row at or below seq ${throughSeq} can be compacted: it lies before the path's last summary`,
          { throughSeq },
        )
      }
      // The path through `throughId`: the rows the summary will stand for.
      const path = pathOf(tree)
      const replaced = new Set(path.slice(0, path.indexOf(throughId) + 1))
      const ids = contextIds(tree).filter((id) => replaced.has(id))
      const stored = (await db.messages.bulkGet(ids)).filter((r): r is SessionMessage => r !== undefined)
      const whole = row.lagging ? await currentRows(db, row, stored) : stored
      const byId = new Map(whole.map((r) => [r.id, r]))
      return {
        expectedHead,
        throughId,
        rows: contextFor(tree, (id) => (replaced.has(id) ? byId.get(id) : undefined)),
      }
    })
  }

  /**
   * Outline entries as the rail shows them: a turn none of whose rows is on the active path (and
   * that is not the open one) is marked `inactive`, as an import marks its superseded turns.
   * Positions stay as stored, so slices keep their meaning.
   */
  async function markOutline(
    sessionId: string,
    entries: readonly TurnOutlineEntry[],
    openTurn: number | null,
  ): Promise<TurnOutlineEntry[]> {
    const tree = await inRead(db, async () => {
      const row = await getSessionRow(db, sessionId)
      if (!row) throw notFound(sessionId)
      return treeOf(row)
    })
    const active = new Set<number>()
    for (const id of visibleIds(tree)) active.add(nodeOf(tree, id)!.turn)
    return entries.map((entry) => {
      const shown = active.has(entry.turn) || entry.turn === openTurn
      if (shown)
        return entry.visibility === undefined
          ? entry
          : { turn: entry.turn, seq: entry.seq, prompt: entry.prompt, response: entry.response }
      return entry.visibility === 'inactive' ? entry : { ...entry, visibility: 'inactive' }
    })
  }

  /**
   * A new native session holding the source's visible path through `throughSeq` (all of it by
   * default), as ordinary turns under new row ids (core/fork). An imported source gives its
   * visible rows in seq order; a native one its path in context order (its last summary first).
   */
  async function fork(
    sessionId: string,
    request: { throughSeq?: number; title?: string; id: string },
  ): Promise<SessionInfo> {
    const at = now()
    const snap = await inWrite(db, async () => {
      const [source, taken] = await Promise.all([getSessionRow(db, sessionId), getSessionRow(db, request.id)])
      if (!source) throw notFound(sessionId)
      if (taken) {
        throw new SessionlineError('conflict', `a session ${JSON.stringify(request.id)} already exists`, {
          sessionId: request.id,
        })
      }
      let rows: SessionMessage[]
      if (source.source === 'native') {
        const tree = await treeOf(source)
        const stored = await db.messages.bulkGet(contextIds(tree))
        rows = stored.filter((r): r is SessionMessage => r !== undefined)
        if (source.lagging) rows = await currentRows(db, source, rows)
      } else {
        rows = (await rowsFrom(db, sessionId, 1, undefined, false)).filter((r) => r.visibility === 'visible')
      }
      const through = request.throughSeq
      if (through !== undefined) rows = rows.filter((r) => r.seq <= through)
      const title = request.title ?? source.title
      let n = 0
      const events: SessionEvent[] = [
        { type: 'session/created', data: { title } },
        ...forkEvents(rows, () => forkRowId(request.id, n++)),
      ]
      const folded = stampAndFold(initFolds(), events, request.id, 1, at)
      const row: SessionRow = {
        id: request.id,
        title,
        createdAt: at,
        updatedAt: at,
        headSeq: events.length,
        nextInputSeq: 1,
        source: 'native',
        rev: 1,
      }
      const snap: Snapshot = { row, folds: folded.folds, pending: [] }
      row.readHint = readHintAfter(row, snap)
      assertInTransaction('fork')
      await Promise.all([
        db.sessions.add(row),
        db.events.bulkAdd(folded.stored),
        folded.rows.length > 0 ? addRows(db, folded.rows) : undefined,
        cache.putFolds(request.id, row.headSeq, folded.folds),
        referAttachments(
          db,
          request.id,
          rows.flatMap((r) => r.parts.flatMap((part) => (part.type === 'file' ? [part.attachmentId] : []))),
        ),
      ])
      return snap
    })
    await cache.use(request.id, async (entry) => {
      if (!entry.snap) cache.setSnapshot(entry, snap)
    })
    return sessionInfo(snap.row)
  }

  /**
   * Inside a write transaction, before it commits a row the ordinary write path creates under a
   * head that already has rows below it (the branching fold's `under`): those rows, each with
   * its branch place counting the one joining them, where it changes. So an inactive sibling's
   * stored count never lags (docs/decisions/0033, "Branch places"). The tree is the one at the
   * head `row` names, the log before the write.
   */
  function siblingsJoined(row: SessionRow): Promise<SessionMessage[]> {
    return treeOf(row).then((tree) => {
      const ids = childIds(tree, headOf(tree))
      if (ids.length === 0) return []
      const count = ids.length + 1
      return db.messages.bulkGet(ids).then((rows) => {
        const out: SessionMessage[] = []
        rows.forEach((r, index) => {
          if (r === undefined) return
          const next = placed(r, undefined, { index, count })
          if (next !== r) out.push(next)
        })
        return out
      })
    })
  }

  /** Forgets a session's kept tree (deleted, or rewritten by an import). */
  const forget = (sessionId: string) => {
    trees.delete(sessionId)
  }

  return {
    verb,
    switchBranch,
    branches,
    siblingsJoined,
    context,
    compactionSource,
    fork,
    markOutline,
    forget,
  }
}
