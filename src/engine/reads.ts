/**
 * The engine's reads of a session's rows and projections: `page` and `loadThrough` read rows from
 * the `messages` table in one read transaction with the session row (streaming rows that lag in
 * storage patched from the log), `outline` and `projection` read the cached fold state. Each
 * parses its request and answers what the `Engine` method of the same name answers.
 *
 * @example
 *   const reads = createReads({ db, cache, history })
 *   const engine = { page: guard('page', reads.page), … }
 */
import { z } from 'zod'
import { Id } from '../schema/common'
import { parseOrThrow } from '../schema/errors'
import type { InputReceipt } from '../schema/inputs'
import type { SessionMessage } from '../schema/messages'
import {
  DEFAULT_OUTLINE_SLICE,
  FirstReadRequest,
  LoadThroughRequest,
  type MessagePage,
  OutlineRequest,
  PageRequest,
} from '../schema/requests'
import type { SessionlineDb, SessionRow } from '../store/db'
import {
  getSessionRow,
  inRead,
  inRowsRead,
  pendingReceipts,
  rowsAbove,
  rowsBelow,
  rowsFrom,
} from '../store/transactions'
import { type Entry, sameVersion } from './cache/entries'
import { currentRows } from './cache/load'
import { outlineRange } from './cache/outline'
import type { createHistory } from './history'
import { notFound, type SessionCache } from './session-cache'
import type { Engine, ProjectionName, ProjectionViews } from './types'

const ProjectionNameSchema = z.enum(['turnOutline', 'usage', 'pending'])

const sessionIdOf = (value: unknown) => parseOrThrow(Id, value, 'session id')

export interface ReadsDeps {
  db: SessionlineDb
  cache: SessionCache
  /** Marks outline entries off the head's path in a branched session (docs/decisions/0033). */
  history: Pick<ReturnType<typeof createHistory>, 'markOutline'>
}

/** The rows of a page and where they stand: `hasNewer` only for a page read upwards. */
interface RowWindow {
  rows: SessionMessage[]
  hasOlder: boolean
  hasNewer?: boolean
}

export function createReads({ db, cache, history }: ReadsDeps) {
  /**
   * A rows read beside a watch that is still loading the session waits for it: read earlier, it
   * could miss a commit of another engine that the load then takes in without a change. (Read
   * beside the load instead, and again when it saw an older head, it was no faster; decision
   * 0025's amendment.)
   */
  const loadedBeforeRows = (id: string) => cache.entries.get(id)?.opening?.catch(() => undefined)

  /**
   * Reads the session row and the window `readWindow` gives in one read transaction (`read`: over
   * the rows, or every table when the window reads more beside them), as the page readers must
   * see: streaming rows that lag in storage patched from the log.
   */
  async function pageOf(id: string, readWindow: () => Promise<RowWindow>, read = inRowsRead) {
    return (await rowsRead(id, readWindow, read)).page
  }

  /** `pageOf` with the session row the page was read with. */
  async function rowsRead(id: string, readWindow: () => Promise<RowWindow>, read = inRowsRead) {
    await loadedBeforeRows(id)
    const { row, page } = await read(db, async () => {
      const [row, window] = await Promise.all([getSessionRow(db, id), readWindow()])
      if (!row) throw notFound(id)
      const page: MessagePage = {
        messages: window.rows,
        baseSeq: window.rows[0]?.seq ?? 0,
        headSeq: row.headSeq,
        hasOlder: window.hasOlder,
      }
      if (window.hasNewer !== undefined) page.hasNewer = window.hasNewer
      return { row, page }
    })
    return { row, page: await withCurrentRows(row, page) }
  }

  async function withCurrentRows(row: SessionRow, page: MessagePage): Promise<MessagePage> {
    if (!row.lagging) return page
    return { ...page, messages: await currentRows(db, row, page.messages) }
  }

  const page: Engine['page'] = async (sessionId, request = {}) => {
    const id = sessionIdOf(sessionId)
    const { beforeSeq, afterSeq, limit, includeInactive } = parseOrThrow(PageRequest, request, 'page request')
    return pageOf(id, async () => {
      if (afterSeq === undefined) return rowsBelow(db, id, beforeSeq, limit, includeInactive)
      // Upwards from `afterSeq`; whether anything lies at or below it is the page's `hasOlder`.
      const [above, below] = await Promise.all([
        rowsAbove(db, id, afterSeq, beforeSeq, limit, includeInactive),
        rowsBelow(db, id, afterSeq + 1, 0, includeInactive),
      ])
      return { rows: above.rows, hasOlder: below.hasOlder, hasNewer: above.hasNewer }
    })
  }

  const loadThrough: Engine['loadThrough'] = async (sessionId, request) => {
    const id = sessionIdOf(sessionId)
    const { seq, beforeSeq, pageSize, includeInactive } = parseOrThrow(
      LoadThroughRequest,
      request,
      'loadThrough request',
    )
    return pageOf(id, () => throughWindow(id, seq, beforeSeq, pageSize, includeInactive))
  }

  /** Every row from `seq` (below `beforeSeq`), with older ones filling the last page of `pageSize`. */
  async function throughWindow(
    id: string,
    seq: number,
    beforeSeq: number | undefined,
    pageSize: number,
    includeInactive: boolean,
  ): Promise<RowWindow> {
    const from = await rowsFrom(db, id, seq, beforeSeq, includeInactive)
    // Fill the last page the way paging by `pageSize` would have, so the window ends on a page boundary.
    const fill = (pageSize - (from.length % pageSize)) % pageSize
    const below = from[0]?.seq ?? Math.max(1, Math.min(seq, beforeSeq ?? seq))
    // From seq 1 every row is in `from` already: nothing lies below it (the whole history).
    const older =
      seq <= 1 ? { rows: [], hasOlder: false } : await rowsBelow(db, id, below, fill, includeInactive)
    return { rows: [...older.rows, ...from], hasOlder: older.hasOlder }
  }

  /**
   * A view's first read in one answer (docs/decisions/0038, amendment): the rows and the pending
   * receipts in one read transaction, ordered behind a watch still loading like `page`, and the
   * outline's newest slice. When the cached state holds the version of the session row the rows
   * were read with, that state answers the outline as `outline` would after its catch-up read,
   * so that read is left out; otherwise the outline catches up (or loads) as `outline` does.
   */
  const firstRead: Engine['firstRead'] = async (sessionId, request = {}) => {
    const id = sessionIdOf(sessionId)
    const { tail, seq, pageSize, includeInactive } = parseOrThrow(
      FirstReadRequest,
      request,
      'firstRead request',
    )
    const tailWindow = () => rowsBelow(db, id, undefined, tail, includeInactive)
    let pending: InputReceipt[] = []
    const readWindow = async () => {
      // Every read of the transaction is issued in this one wave: a request issued after an
      // await of a nested async read could leave the transaction's scope. So the tail a seq
      // above every row falls back to is read beside the rows from that seq (from seq 1 there
      // is nothing older, so no fallback).
      const [through, tailRows, receipts] = await Promise.all([
        seq === undefined ? undefined : throughWindow(id, seq, undefined, pageSize ?? tail, includeInactive),
        seq === undefined || seq > 1 ? tailWindow() : undefined,
        pendingReceipts(db, id),
      ])
      pending = receipts
      // A seq above every row reads nothing there: the tail after all.
      if (through && !(tailRows && through.hasOlder && through.rows.length < tail)) return through
      return tailRows as RowWindow
    }
    return cache.use(id, async (entry) => {
      const { row, page } = await rowsRead(id, readWindow, inRead)
      if (entry.deleted || !entry.snap || !sameVersion(entry.snap.row, row)) await cache.loadCurrent(entry)
      return { page, pending, outline: await outlineOf(entry, {}) }
    })
  }

  const projection = (async <N extends ProjectionName>(sessionId: string, name: N) => {
    const which = parseOrThrow(ProjectionNameSchema, name, 'projection name')
    return cache.use(sessionIdOf(sessionId), async (entry) => {
      await cache.loadCurrent(entry)
      const snap = entry.snap!
      if (which === 'pending') return snap.pending as ProjectionViews[N]
      if (which === 'turnOutline') {
        const whole = await cache.outline.whole(entry.id, snap)
        // A branched session's rail follows the head (docs/decisions/0033).
        return (
          snap.folds.branching.branched
            ? await history.markOutline(entry.id, whole, snap.folds.transcript.openTurn)
            : whole
        ) as ProjectionViews[N]
      }
      return cache.viewsOf(entry).usage.getView() as ProjectionViews[N]
    })
  }) as Engine['projection']

  const outline: Engine['outline'] = async (sessionId, request = {}) => {
    const id = sessionIdOf(sessionId)
    const range = parseOrThrow(OutlineRequest, request, 'outline request')
    return cache.use(id, async (entry) => {
      await cache.loadCurrent(entry)
      return outlineOf(entry, range)
    })
  }

  /** The outline slice `range` of a loaded entry's state. */
  async function outlineOf(entry: Entry, range: { start?: number | undefined; end?: number | undefined }) {
    const snap = entry.snap!
    const { start, end } = outlineRange(snap.folds.turnOutline.entries.length, range, DEFAULT_OUTLINE_SLICE)
    const slice = await cache.outline.slice(entry.id, snap, start, end)
    if (!snap.folds.branching.branched) return slice
    const entries = await history.markOutline(entry.id, slice.entries, snap.folds.transcript.openTurn)
    return { ...slice, entries }
  }

  return { page, loadThrough, firstRead, projection, outline }
}
