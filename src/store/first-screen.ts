/**
 * The page's read-only first read of a session (docs/decisions/0038): the first screen of a view
 * read straight from the engine's database while the worker starts, answered as the engine's own
 * `page`/`loadThrough` and `pending` would answer at that moment, or not at all.
 *
 * It speaks plain IndexedDB, not Dexie, so a page that uses it bundles no Dexie, and it never
 * writes: it opens the database at whatever version it has (a database that does not exist is
 * not created: the upgrade that would create it is aborted), and answers nothing unless that
 * version is the one this library declares (`SCHEMA_VERSION`) and the session's transcript rows
 * are stored in a shape the engine reads as they are (no rebuild pending). When it answers
 * nothing, the worker's read is the first. It lets go of the database as soon as another
 * connection asks to upgrade or delete it.
 *
 * What it reads mirrors store/transactions.ts (`rowsBelow`, `rowsFrom`, `pendingReceipts`) and
 * the engine's reads (engine/reads.ts: the session row, lagging rows patched from the log), in
 * one readonly transaction; test/client/first-screen.property.test.ts holds the two to the same answers.
 *
 * @example
 *   const reader = firstScreenReader('my-app')
 *   const first = await reader.read({ sessionId, tail: 50, includeInactive: false })
 *   // first: { page, pending } as the engine would answer, or undefined
 */
import { patchFrom, patchLagging, WHOLE_ROWS_TRANSCRIPT } from '../core/materialize'
import { pendingView } from '../core/pending'
import { TRANSCRIPT_VERSION } from '../core/transcript'
import { isReadable } from '../core/visibility'
import type { StoredEvent } from '../schema/events'
import type { InputReceipt } from '../schema/inputs'
import type { SessionMessage } from '../schema/messages'
import type { MessagePage } from '../schema/requests'
import type { ProjectionRow, SessionRow } from './db'
import { SCHEMA_VERSION } from './migrations'
import { currentReadHint } from './read-hint'
import { receiptOf } from './stored-receipt'

/** Dexie stores version `n` of a schema as IndexedDB version `n * 10`. */
const IDB_VERSION = SCHEMA_VERSION * 10

/** The tables one first read spans. */
const TABLES = ['sessions', 'messages', 'inputs', 'projections', 'events']

/** What a view's first read asks: the tail, or every row from `floor` up (`loadThrough` in the opening task). */
export interface FirstScreenRequest {
  sessionId: string
  tail: number
  floor?: number
  includeInactive: boolean
}

/** The first screen as the engine would answer it: the rows' page and the pending receipts. */
export interface FirstScreen {
  page: MessagePage
  pending: InputReceipt[]
}

/** What a first read asks before the rows' floor is known: everything but `floor`. */
export type FirstScreenStart = Omit<FirstScreenRequest, 'floor'>

/** A first read under way: its rows are asked once the floor is known (see `start`). */
export interface FirstScreenRead {
  /** The first screen with the rows from `floor` up (or the tail), or undefined as `read` says. */
  rows(floor: number | undefined): Promise<FirstScreen | undefined>
}

export interface FirstScreenReader {
  /**
   * Starts opening the database now (a page calls it as it connects, before its worker opens the
   * same database: IndexedDB serves the opens of one database in turn).
   */
  prepare(): void
  /**
   * Starts a first read now. With the database open already, its transaction and the session
   * row's request leave at once (the fold's version and the pending receipts, where the row's
   * read hint does not say them, as soon as it answers), so IndexedDB answers while the caller
   * finishes its task; the rows are asked by `rows`, which must be called before the caller's
   * task ends (its microtasks included) for the read to stay one transaction. Called later, the
   * read starts again.
   */
  start(request: FirstScreenStart): FirstScreenRead
  /** The first screen, or undefined when only the worker can answer (see the module comment). */
  read(request: FirstScreenRequest): Promise<FirstScreen | undefined>
  /** Closes the connection (a later read opens it again). */
  close(): void
}

/** Where IndexedDB comes from (Node passes fake-indexeddb's); the global one by default. */
export interface FirstScreenOptions {
  indexedDB?: Pick<IDBFactory, 'open'>
  IDBKeyRange?: Pick<typeof IDBKeyRange, 'bound'>
}

const requested = <T>(request: IDBRequest<T>): Promise<T> =>
  new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result)
    request.onerror = () => reject(request.error)
  })

/** Opens `name` as it is, or resolves undefined if it does not exist or has another version. */
function openAsIs(factory: Pick<IDBFactory, 'open'>, name: string): Promise<IDBDatabase | undefined> {
  return new Promise((resolve) => {
    let request: IDBOpenDBRequest
    try {
      request = factory.open(name)
    } catch {
      resolve(undefined)
      return
    }
    // No database of that name: creating one is the engine's business, so the upgrade is undone.
    request.onupgradeneeded = () => request.transaction?.abort()
    request.onerror = (event) => {
      event.preventDefault()
      resolve(undefined)
    }
    request.onblocked = () => resolve(undefined)
    request.onsuccess = () => {
      const db = request.result
      if (db.version !== IDB_VERSION || TABLES.some((table) => !db.objectStoreNames.contains(table))) {
        db.close()
        resolve(undefined)
        return
      }
      resolve(db)
    }
  })
}

/** A page reader of database `name`; its connection opens on the first read and stays open. */
export function firstScreenReader(name: string, options: FirstScreenOptions = {}): FirstScreenReader {
  const factory = options.indexedDB ?? (globalThis as { indexedDB?: IDBFactory }).indexedDB
  const ranges = options.IDBKeyRange ?? (globalThis as { IDBKeyRange?: typeof IDBKeyRange }).IDBKeyRange
  let opening: Promise<IDBDatabase | undefined> | undefined
  /** The connection once open (what `start` uses without waiting), until it closes. */
  let open: IDBDatabase | undefined
  let closed = false

  const connection = (): Promise<IDBDatabase | undefined> => {
    if (!factory || !ranges) return Promise.resolve(undefined)
    opening ??= openAsIs(factory, name).then((db) => {
      if (db === undefined) {
        opening = undefined // not there yet, or another version: ask again next time
        return undefined
      }
      // Another connection upgrades or deletes the database: never stand in its way.
      db.onversionchange = () => {
        db.close()
        opening = undefined
        open = undefined
      }
      db.onclose = () => {
        opening = undefined
        open = undefined
      }
      if (closed) {
        db.close()
        return undefined
      }
      open = db
      return db
    })
    return opening
  }

  /** A readonly transaction over the first read's tables, or undefined if the connection closed. */
  const transactionOn = (db: IDBDatabase): IDBTransaction | undefined => {
    try {
      return db.transaction(TABLES, 'readonly')
    } catch {
      return undefined // closed meanwhile (an upgrade asked for it)
    }
  }

  async function read(request: FirstScreenRequest): Promise<FirstScreen | undefined> {
    if (closed || !ranges) return undefined
    const db = await connection()
    const tx = db && transactionOn(db)
    if (tx === undefined) return undefined
    try {
      return await readIn(tx, ranges, request, askHead(tx, ranges, request.sessionId))
    } catch {
      return undefined // whatever failed here, the worker's read answers
    }
  }

  function start(request: FirstScreenStart): FirstScreenRead {
    const tx = closed || !ranges || open === undefined ? undefined : transactionOn(open)
    const head = tx && ranges ? askHead(tx, ranges, request.sessionId) : undefined
    head?.head.catch(() => undefined) // its failure is met in `rows`, or nobody asks
    return {
      async rows(floor) {
        const whole: FirstScreenRequest = { ...request, ...(floor === undefined ? {} : { floor }) }
        if (tx === undefined || head === undefined || !ranges) return read(whole)
        try {
          return await readIn(tx, ranges, whole, head)
        } catch {
          // The transaction took no more requests (asked after the task that started it) or
          // failed: one read of everything, alone, answers as `read` does.
          return read(whole)
        }
      },
    }
  }

  return {
    prepare: () => void connection(),
    start,
    read,
    close() {
      closed = true
      void opening?.then((db) => db?.close())
      opening = undefined
      open = undefined
    },
  }
}

const seqRange = (
  ranges: Pick<typeof IDBKeyRange, 'bound'>,
  sessionId: string,
  from: number,
  below: number,
) => ranges.bound([sessionId, from], [sessionId, below], false, true)

/** The seq-index key `skip` entries into `range` read newest first, or undefined past its end. */
function keyBelow(index: IDBIndex, range: IDBKeyRange, skip: number): Promise<[string, number] | undefined> {
  return new Promise((resolve, reject) => {
    const request = index.openKeyCursor(range, 'prev')
    let advanced = skip === 0
    request.onerror = () => reject(request.error)
    request.onsuccess = () => {
      const cursor = request.result
      if (!cursor) resolve(undefined)
      else if (advanced) resolve(cursor.key as [string, number])
      else {
        advanced = true
        cursor.advance(skip)
      }
    }
  })
}

/** `getAllRecords` (Chromium 141 and later): a range read newest first in one request. */
type RecordsIndex = IDBIndex & {
  getAllRecords(options: {
    query: IDBKeyRange
    count: number
    direction: 'prev'
  }): IDBRequest<{ value: unknown }[]>
}
const readsNewestFirst = (index: IDBIndex): index is RecordsIndex =>
  typeof (index as Partial<RecordsIndex>).getAllRecords === 'function'

/**
 * How many seqs a read from a floor asks in its first range, before the session row says where
 * the log ends. One `getAll` of a long history leaves IndexedDB idle while the page decodes and
 * the page idle while IndexedDB reads; ranges asked together overlap the two (docs/performance-notes.md,
 * "Reads in flight"). A short log fits the first range: when the row's current read hint vouches
 * that no row lies above its head, that range is the only one, as one request was before.
 */
export const FIRST_RANGE_SEQS = 2048

/** How many ranges follow the first when the log goes past it. */
export const RANGES_AFTER_FIRST = 4

/**
 * The seq ranges `[lower, upper)` that cover every seq from `lower` up, the last unbounded: a
 * log's seqs count its events, so ranges of equal width up to `head` hold about as much text
 * each. Bounds are whole and increasing wherever they split.
 */
export function rangesAbove(lower: number, head: number | undefined): [number, number][] {
  const parts = RANGES_AFTER_FIRST
  if (head === undefined || !(head + 1 - lower > parts)) return [[lower, Number.POSITIVE_INFINITY]]
  const width = (head + 1 - lower) / parts
  const bound = (i: number) =>
    i === 0 ? lower : i === parts ? Number.POSITIVE_INFINITY : Math.round(lower + width * i)
  return Array.from({ length: parts }, (_, i): [number, number] => [bound(i), bound(i + 1)])
}

/** The rows of a first read: the window asked for, and whether rows are older than it. */
interface Window {
  rows: SessionMessage[]
  hasOlder: boolean
}

/** What a first read needs besides the rows. */
interface Head {
  session: SessionRow | undefined
  /** The version the transcript fold is stored in (undefined: not stored). */
  transcript: number | undefined
  pending: InputReceipt[]
}

/** The head of a first read under way: the session row as soon as it answers, and the whole head. */
interface HeadRead {
  session: Promise<SessionRow | undefined>
  head: Promise<Head>
}

/**
 * In `tx`: the session row (asked at once), then the transcript fold's stored version and the
 * pending receipts, each read only when the row's read hint (store/read-hint.ts) does not say it.
 */
function askHead(tx: IDBTransaction, ranges: Pick<typeof IDBKeyRange, 'bound'>, sessionId: string): HeadRead {
  const session = requested<SessionRow | undefined>(tx.objectStore('sessions').get(sessionId))
  return { session, head: session.then((row) => headAfter(tx, ranges, sessionId, row)) }
}

async function headAfter(
  tx: IDBTransaction,
  ranges: Pick<typeof IDBKeyRange, 'bound'>,
  sessionId: string,
  session: SessionRow | undefined,
): Promise<Head> {
  if (session === undefined) return { session, transcript: undefined, pending: [] }
  const hint = currentReadHint(session)
  const [transcript, pending] = await Promise.all([
    hint?.transcript ??
      requested<ProjectionRow | undefined>(tx.objectStore('projections').get([sessionId, 'transcript'])).then(
        (fold) => fold?.version,
      ),
    hint?.pending === 0
      ? []
      : requested<InputReceipt[]>(
          tx
            .objectStore('inputs')
            .index('[sessionId+status+seq]')
            .getAll(
              ranges.bound([sessionId, 'pending', Number.NEGATIVE_INFINITY], [sessionId, 'pending', []]),
            ),
        ),
  ])
  return { session, transcript, pending }
}

/**
 * Where a session's log ends, from its row: its head, and whether its current read hint says
 * no stored row lies above it (`bounded`).
 */
interface LogEnd {
  headSeq: number
  bounded: boolean
}

/**
 * In `tx`: the rows the engine's first read answers; its first request leaves before it returns.
 * `logEnd` answers with the session row (asked before the rows), undefined when there is none.
 */
async function readWindow(
  tx: IDBTransaction,
  ranges: Pick<typeof IDBKeyRange, 'bound'>,
  { sessionId, tail, floor, includeInactive }: FirstScreenRequest,
  logEnd: Promise<LogEnd | undefined>,
): Promise<Window> {
  const messages = tx.objectStore('messages').index('[sessionId+seq]')
  const keep = (row: SessionMessage) => isReadable(row.visibility, includeInactive)

  /** The newest `count` rows in `range`, newest first. */
  async function newest(range: IDBKeyRange, count: number): Promise<SessionMessage[]> {
    if (readsNewestFirst(messages)) {
      const records = await requested(messages.getAllRecords({ query: range, count, direction: 'prev' }))
      return records.map((record) => record.value as SessionMessage)
    }
    // The count-th newest key bounds one ascending getAll: two requests, not one per row.
    const lowest = await keyBelow(messages, range, count - 1)
    const from = lowest?.[1] ?? Number.NEGATIVE_INFINITY
    const rows = await requested<SessionMessage[]>(
      messages.getAll(ranges.bound([sessionId, from], range.upper, false, true)),
    )
    return rows.reverse()
  }

  /** `rowsBelow`: the newest `limit` readable rows below `beforeSeq`, and whether more are below. */
  async function rowsBelow(beforeSeq: number | undefined, limit: number): Promise<Window> {
    const newestFirst: SessionMessage[] = []
    let upper = beforeSeq ?? Number.POSITIVE_INFINITY
    for (;;) {
      const want = limit + 1 - newestFirst.length
      const batch = await newest(seqRange(ranges, sessionId, Number.NEGATIVE_INFINITY, upper), want)
      for (const row of batch) if (keep(row)) newestFirst.push(row)
      const oldest = batch.at(-1)
      if (batch.length < want || newestFirst.length > limit || !oldest) break
      upper = oldest.seq
    }
    const hasOlder = newestFirst.length > limit
    return { rows: (hasOlder ? newestFirst.slice(0, limit) : newestFirst).reverse(), hasOlder }
  }

  const rowsIn = (lower: number, upper: number) =>
    requested<SessionMessage[]>(messages.getAll(seqRange(ranges, sessionId, lower, upper)))

  /**
   * Every stored row from `from` up, in seq ranges asked together: the first at once, the rest
   * as soon as the session row says where the log ends (none when the first reached it).
   */
  async function storedFrom(from: number): Promise<SessionMessage[]> {
    if (!Number.isFinite(from)) return rowsIn(from, Number.POSITIVE_INFINITY)
    const firstUpper = from + FIRST_RANGE_SEQS
    const first = rowsIn(from, firstUpper)
    const rest = logEnd.then((end) =>
      end?.bounded && end.headSeq < firstUpper
        ? []
        : Promise.all(rangesAbove(firstUpper, end?.headSeq).map(([lower, upper]) => rowsIn(lower, upper))),
    )
    const [firstRows, restRows] = await Promise.all([first, rest])
    return firstRows.concat(...restRows)
  }

  /** `loadThrough({seq: floor, pageSize: tail})`: every readable row from `floor`, filled to a page. */
  async function rowsThrough(from: number): Promise<Window> {
    const rows = (await storedFrom(from)).filter(keep)
    const fill = (tail - (rows.length % tail)) % tail
    const below = rows[0]?.seq ?? Math.max(1, from)
    const older = from <= 1 ? { rows: [], hasOlder: false } : await rowsBelow(below, fill)
    return { rows: [...older.rows, ...rows], hasOlder: older.hasOlder }
  }

  if (floor === undefined) return rowsBelow(undefined, tail)
  const through = await rowsThrough(floor)
  // As a view's first read: a floor above every row reads the tail after all.
  return through.hasOlder && through.rows.length < tail ? rowsBelow(undefined, tail) : through
}

/** In `tx`, beside its `head` (asked already): the rows, then the first screen as `answer` makes it. */
async function readIn(
  tx: IDBTransaction,
  ranges: Pick<typeof IDBKeyRange, 'bound'>,
  request: FirstScreenRequest,
  { session, head }: HeadRead,
): Promise<FirstScreen | undefined> {
  const logEnd = session.then(
    (row) => row && { headSeq: row.headSeq, bounded: currentReadHint(row) !== undefined },
  )
  const [read, window] = await Promise.all([head, readWindow(tx, ranges, request, logEnd)])
  return answer(tx, ranges, request, read, window)
}

/** From what `tx` read: the first screen as the engine answers it, or undefined (see the module comment). */
async function answer(
  tx: IDBTransaction,
  ranges: Pick<typeof IDBKeyRange, 'bound'>,
  { sessionId }: FirstScreenRequest,
  { session, transcript, pending }: Head,
  window: Window,
): Promise<FirstScreen | undefined> {
  // Missing (the worker says `not_found`), or rows the engine would rebuild before reading them.
  if (session === undefined) return undefined
  if (transcript !== TRANSCRIPT_VERSION && transcript !== WHOLE_ROWS_TRANSCRIPT) return undefined

  // Streaming rows whose stored version lags the log are patched from it (docs/decisions/0021).
  let rows = window.rows
  const lagFrom = patchFrom(
    session.lagging,
    rows.map((row) => row.id),
  )
  if (lagFrom !== undefined) {
    const events = await requested<StoredEvent[]>(
      tx
        .objectStore('events')
        .getAll(ranges.bound([sessionId, lagFrom], [sessionId, session.headSeq], true, false)),
    )
    rows = patchLagging(rows, session.lagging, events)
  }

  const receipts = pending.map(receiptOf)
  return {
    page: { messages: rows, baseSeq: rows[0]?.seq ?? 0, headSeq: session.headSeq, hasOlder: window.hasOlder },
    pending: receipts.some((r) => r.rank !== undefined) ? pendingView(receipts) : receipts,
  }
}
