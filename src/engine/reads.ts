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
import type { SessionMessage } from '../schema/messages'
import {
  DEFAULT_OUTLINE_SLICE,
  LoadThroughRequest,
  type MessagePage,
  OutlineRequest,
  PageRequest,
} from '../schema/requests'
import type { SessionlineDb, SessionRow } from '../store/db'
import { getSessionRow, inRowsRead, rowsAbove, rowsBelow, rowsFrom } from '../store/transactions'
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
   * Reads the session row and the window `readWindow` gives in one read transaction, as the page
   * readers must see: streaming rows that lag in storage patched from the log.
   */
  async function pageOf(id: string, readWindow: () => Promise<RowWindow>) {
    await loadedBeforeRows(id)
    const { row, page } = await inRowsRead(db, async () => {
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
    return withCurrentRows(row, page)
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
    // A view's first read is this one when it was asked to load through a seq as it opened.
    return pageOf(id, async () => {
      const from = await rowsFrom(db, id, seq, beforeSeq, includeInactive)
      // Fill the last page the way paging by `pageSize` would have, so the window ends on a page boundary.
      const fill = (pageSize - (from.length % pageSize)) % pageSize
      const below = from[0]?.seq ?? Math.max(1, Math.min(seq, beforeSeq ?? seq))
      // From seq 1 every row is in `from` already: nothing lies below it (the whole history).
      const older =
        seq <= 1 ? { rows: [], hasOlder: false } : await rowsBelow(db, id, below, fill, includeInactive)
      return { rows: [...older.rows, ...from], hasOlder: older.hasOlder }
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
      const snap = entry.snap!
      const { start, end } = outlineRange(snap.folds.turnOutline.entries.length, range, DEFAULT_OUTLINE_SLICE)
      const slice = await cache.outline.slice(entry.id, snap, start, end)
      if (!snap.folds.branching.branched) return slice
      const entries = await history.markOutline(entry.id, slice.entries, snap.folds.transcript.openTurn)
      return { ...slice, entries }
    })
  }

  return { page, loadThrough, projection, outline }
}
