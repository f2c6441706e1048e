/**
 * The upgrade scenarios' page side: a frozen database (test/store/fixtures: version 1, or version
 * 5 with its chunk rows named as before version 6) is loaded into this browser's IndexedDB as its
 * release left it, today's engine opens it, and every session is compared with what the old
 * release served and with the fixture's rows.
 */
import type { SessionlineClient } from '../../../../src/client/types'
import { isReadable } from '../../../../src/core/visibility'
import type { InputReceipt } from '../../../../src/schema/inputs'
import type { MessagePage } from '../../../../src/schema/requests'
import {
  type FrozenDatabase,
  frozenRows,
  loadFrozenDatabase,
  parseFrozenDatabase,
} from '../../../support/frozen-database'
import { readLog } from './audit'

/** The frozen databases by schema version, each fetched only when a scenario asks for it. */
const FIXTURES = {
  1: () => import('../../../store/fixtures/v1-database.json'),
  5: () => import('../../../store/fixtures/v5-database.json'),
} as const
export type FrozenVersion = keyof typeof FIXTURES

let loaded: FrozenDatabase | undefined

type Row = Record<string, unknown>

const bySeq = (a: Row, b: Row) => (a.seq as number) - (b.seq as number)
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)
/** The page the fixtures' writers served (`page({ limit: 1000 })`). */
const PAGE = 1000

export async function loadFrozen(dbName: string, version: FrozenVersion = 1): Promise<void> {
  loaded = parseFrozenDatabase((await FIXTURES[version]()).default)
  await loadFrozenDatabase(loaded, indexedDB, dbName)
}

/** Names of the chunk rows of cached fold state in `dbName`, read with plain IndexedDB. */
export async function chunkRowNames(dbName: string): Promise<string[]> {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const open = indexedDB.open(dbName)
    open.onsuccess = () => resolve(open.result)
    open.onerror = () => reject(open.error)
  })
  try {
    const keys = await new Promise<IDBValidKey[]>((resolve, reject) => {
      const request = db.transaction('projections', 'readonly').objectStore('projections').getAllKeys()
      request.onsuccess = () => resolve(request.result)
      request.onerror = () => reject(request.error)
    })
    return keys
      .map((key) => (key as [string, string]).join(' '))
      .filter((name) => name.includes('#'))
      .sort()
  } finally {
    db.close()
  }
}

/** Differences between what today's engine serves and the fixture; empty when the upgrade kept everything. */
export async function compareWithFrozen(
  client: SessionlineClient,
): Promise<{ sessions: number; rows: number; problems: string[] }> {
  const fixture = loaded
  if (!fixture) throw new Error('no frozen database loaded')
  const problems: string[] = []
  const check = (ok: boolean, what: string) => {
    if (!ok) problems.push(what)
  }
  check(
    same(await client.listSessions(), fixture.served.sessions),
    'listSessions differs from the old release',
  )
  const events = frozenRows(fixture, 'events')
  const messages = frozenRows(fixture, 'messages')
  const inputs = frozenRows(fixture, 'inputs')
  let rows = 0
  for (const session of fixture.served.sessions) {
    const id = session.id as string
    const served = fixture.served.bySession[id]!
    check(same(await client.getSession(id), served.info), `${id}: getSession`)
    const log = await readLog(client, id)
    const frozenEvents = events.filter((e) => e.sessionId === id).sort(bySeq)
    check(same(log.events, frozenEvents), `${id}: events`)
    const frozenMessages = messages
      .filter((m) => m.sessionId === id)
      .sort(bySeq) as unknown as MessagePage['messages']
    const withInactive = await client.page(id, { limit: PAGE, includeInactive: true })
    const page = await client.page(id, { limit: PAGE })
    check(
      same(
        withInactive.messages,
        // The newest PAGE rows: a session may hold more than one page (version 5's `long`).
        frozenMessages.filter((m) => isReadable(m.visibility, true)).slice(-PAGE),
      ),
      `${id}: rows with inactive`,
    )
    check(
      same(page.messages, frozenMessages.filter((m) => isReadable(m.visibility, false)).slice(-PAGE)),
      `${id}: rows`,
    )
    const bounds = ({ messages: list, ...rest }: MessagePage) => ({ ...rest, ids: list.map((m) => m.id) })
    check(same(bounds(page), served.page), `${id}: page bounds`)
    check(same(bounds(withInactive), served.pageWithInactive), `${id}: page bounds with inactive`)
    // The first release had no receipt revisions: today's engine serves its receipts as revision 0.
    const asServedToday = (r: object) => ({ ...r, revision: (r as Partial<InputReceipt>).revision ?? 0 })
    const pending = inputs
      .filter((r) => r.sessionId === id && r.status === 'pending')
      .sort(bySeq)
      .map(asServedToday)
    check(
      same(log.pending, pending) && same(log.pending, served.pending.map(asServedToday)),
      `${id}: pending receipts`,
    )
    check(same(log.outline, served.turnOutline), `${id}: turn outline`)
    check(same(await client.projection(id, 'usage'), served.usage), `${id}: usage`)
    rows += frozenEvents.length + withInactive.messages.length + pending.length
  }
  return { sessions: fixture.served.sessions.length, rows, problems }
}

/**
 * Opens `dbName` one IndexedDB version higher, as a newer release in another tab would; resolves
 * with whether the open had to wait for this origin's other connections to close.
 */
export function openNewerVersion(dbName: string): Promise<{ version: number; blocked: boolean }> {
  return new Promise((resolve, reject) => {
    const probe = indexedDB.open(dbName)
    probe.onerror = () => reject(probe.error)
    probe.onsuccess = () => {
      const version = probe.result.version + 1
      probe.result.close()
      let blocked = false
      const open = indexedDB.open(dbName, version)
      open.onblocked = () => {
        blocked = true
      }
      open.onerror = () => reject(open.error)
      open.onsuccess = () => {
        open.result.close()
        resolve({ version, blocked })
      }
    }
  })
}
