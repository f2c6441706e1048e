/**
 * The Dexie schema, as an ordered list of versions. A version is only ever appended: a database
 * created by an older release is upgraded on open to the newest spec of every table (Dexie
 * compares what is installed with what is declared) and then by the upgrade function of each
 * version above the installed one (store/db.ts declares the list that way).
 *
 * @example
 *   declareSchema(db, SCHEMA_VERSIONS) // db.version(6).stores({ ...every table's newest spec }).upgrade(…)
 */
import type { Transaction } from 'dexie'
import type { ProjectionRow } from './db'
import { renamedChunk } from './projection-state'

export interface SchemaVersion {
  readonly version: number
  /** Dexie store specs; a table left out keeps its previous spec. */
  readonly stores: Readonly<Record<string, string>>
  readonly why: string
  /**
   * Rewrites rows an older release stored, inside the upgrade transaction, when a database below
   * this version is opened. It must leave rows already in this version's shape as they are.
   */
  readonly upgrade?: (tx: Transaction) => Promise<void>
}

/** Chunk rows renamed per round of the upgrade: the rows of one round are held in memory at once. */
const RENAME_BATCH = 32

/** Version 6: chunk rows take the names that sort by index (src/store/projection-state.ts). */
async function renameChunkRows(tx: Transaction): Promise<void> {
  const projections = tx.table<ProjectionRow, [string, string]>('projections')
  const keys = (await projections.toCollection().primaryKeys()) as [string, string][]
  const old = keys.filter(([, name]) => renamedChunk(name) !== undefined)
  for (let start = 0; start < old.length; start += RENAME_BATCH) {
    const batch = old.slice(start, start + RENAME_BATCH)
    const rows = (await projections.bulkGet(batch)).filter((row): row is ProjectionRow => row !== undefined)
    await projections.bulkDelete(batch)
    await projections.bulkPut(rows.map((row) => ({ ...row, name: renamedChunk(row.name) ?? row.name })))
  }
}

export const SCHEMA_VERSIONS: readonly SchemaVersion[] = [
  {
    version: 1,
    // As the release that wrote version 1 declared it (test/store/migrations pins it): an old
    // version is never edited, not even its text; the layout is docs/architecture.md §3 today.
    why: 'the layout of DESIGN.md §3',
    stores: {
      sessions: 'id, updatedAt',
      events: '[sessionId+seq]',
      inputs: 'id, [sessionId+seq]',
      messages: 'id, [sessionId+seq]',
      projections: '[sessionId+name]',
    },
  },
  {
    version: 2,
    // Promote and admit read the pending set on every call; without this index they walk
    // every receipt the session ever had. IndexedDB builds the new index from existing rows.
    why: 'index pending receipts by session and admission seq',
    stores: { inputs: 'id, [sessionId+seq], [sessionId+status+seq]' },
  },
  {
    version: 3,
    // The full-text index of each session, in parts (part 0: what it is synced to; 1…: index
    // segments), so a reload loads it instead of rebuilding it and a write rewrites one segment.
    why: 'persist the search index beside the rows it indexes',
    stores: { search: '[sessionId+part]' },
  },
  {
    version: 4,
    // Attachment bytes, once per content (key: SHA-256 hex), and which sessions use them
    // (docs/decisions/0031): deleting a session frees the bytes no other session references.
    why: 'store attachment bytes by content hash, with the sessions that reference them',
    stores: { attachments: 'id', attachmentRefs: '[sessionId+attachmentId], attachmentId' },
  },
  {
    version: 5,
    // Session sync (docs/decisions/0036): per synced session, where its stream was read to and
    // how much of the log is canonical, and the batches this device has yet to see confirmed.
    why: 'keep the stream cursor and outbox of each synced session beside its log',
    stores: { syncState: 'sessionId', syncOutbox: '[sessionId+fromSeq]' },
  },
  {
    version: 6,
    // A cold open reads the outline's last chunks beside the fold heads by a reverse range read
    // over their names (issue 28), which needs names that sort by index: `#12` → `#00000012`.
    why: 'name the chunk rows of cached fold state so they sort by index',
    stores: {},
    upgrade: renameChunkRows,
  },
]

export const SCHEMA_VERSION = SCHEMA_VERSIONS[SCHEMA_VERSIONS.length - 1]?.version ?? 1
