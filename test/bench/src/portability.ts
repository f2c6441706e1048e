/**
 * (13) attachments and whole-session files (docs/decisions/0031, 0032): admitting a 10 MB Blob
 * against a raw Dexie put of the same Blob; exporting a long session against raw Dexie reading
 * the same records; importing its `sessionline` export against raw Dexie bulk-writing them.
 */
import Dexie, { type Table } from 'dexie'
import type { Engine } from '../../../src/engine/types'
import type { SearchIndexEvent } from '../../../src/index'
import type { StoredEvent } from '../../../src/schema/events'
import type { InputReceipt } from '../../../src/schema/inputs'
import type { SessionMessage } from '../../../src/schema/messages'
import type { BenchConfig } from './config'
import { type BenchEnv, clock, freshEngine, newSessionId } from './env'
import { chunks, Stamper, seededTurns } from './fixtures'
import { freshRaw } from './raw'
import { type Comparison, compare, measureSides, timed } from './stats'

const MB10 = 10 * 1024 * 1024
const PORT_DB = { sessionline: 'bench-port-sessionline', raw: 'bench-port-raw', import: 'bench-port-import' }

/** 10 MB of bytes no other step has (so the engine never finds them stored already). */
function uniqueBytes(seed: number): Blob {
  const bytes = new Uint8Array(MB10)
  let x = (seed * 2654435761) >>> 0 || 1
  const words = new Uint32Array(bytes.buffer)
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    words[i] = x >>> 0
  }
  return new Blob([bytes], { type: 'image/png' })
}

type BlobDb = Dexie & { blobs: Table<{ id: string; data: Blob }, string> }

async function freshBlobDb(env: BenchEnv): Promise<BlobDb> {
  const db = new Dexie('bench-port-blobs', { ...env.dexie, cache: 'disabled' }) as BlobDb
  db.version(1).stores({ blobs: 'id' })
  await db.delete()
  await db.open()
  return db
}

export async function runPortability(env: BenchEnv, cfg: BenchConfig): Promise<Comparison[]> {
  env.log('(13a) admit a 10 MB Blob')
  const admit = await benchAttachmentAdmit(env, cfg)
  env.log(`(13b) export and import a ${cfg.seedTurns}-turn session`)
  return [...admit, ...(await benchFiles(env, cfg))]
}

/** SHA-256 of `data`'s bytes: the raw side's share of the work a content key needs. */
async function digestOf(data: Blob): Promise<ArrayBuffer> {
  return crypto.subtle.digest('SHA-256', await data.arrayBuffer())
}

async function benchAttachmentAdmit(env: BenchEnv, cfg: BenchConfig): Promise<Comparison[]> {
  const engine = await freshEngine(env, PORT_DB.sessionline)
  const raw = await freshBlobDb(env)
  let seed = 0
  try {
    const steps = 3
    const figures = await measureSides(
      {
        sessionline: async (rep) => {
          const { id } = await engine.createSession({ id: newSessionId('attach', rep) })
          return async (i) => {
            const data = uniqueBytes(++seed)
            const attachments = [{ name: 'big.png', mediaType: 'image/png', data }]
            return timed(() => engine.admit(id, { id: `${id}-in${i}`, text: 'look', attachments }))
          }
        },
        raw: async () => async () => {
          const data = uniqueBytes(++seed)
          return timed(() => raw.transaction('rw', raw.blobs, () => raw.blobs.put({ id: `b${seed}`, data })))
        },
        // What a content key costs anywhere: the Blob read back into memory and hashed, then put
        // under its hash. Reading 10 MB back from Chromium's blob store is the larger half.
        rawHashed: async () => async () => {
          const data = uniqueBytes(++seed)
          return timed(async () => {
            const digest = new Uint8Array(await digestOf(data))
            const id = Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('')
            await raw.transaction('rw', raw.blobs, () => raw.blobs.put({ id, data }))
          })
        },
      },
      { reps: cfg.writeReps, steps, warmup: true },
    )
    return [
      compare(
        {
          id: 'attachment-admit',
          name: 'admit with one 10 MB Blob',
          op: 'admit of 10 MB',
          target: 1.3,
          note: 'sessionline: read + SHA-256 before the transaction, then bytes, refs and receipt in one; raw: one put of the Blob',
        },
        figures.sessionline,
        figures.raw,
      ),
      compare(
        {
          id: 'attachment-admit-like-raw',
          name: 'admit with one 10 MB Blob, vs raw reading, hashing and putting it',
          op: 'admit of 10 MB',
          target: 1.15,
          note: 'raw: the Blob read into memory, SHA-256, then one put keyed by the hash (the work a content key needs)',
        },
        figures.sessionline,
        figures.rawHashed,
      ),
      compare(
        {
          id: 'attachment-hash-vs-put',
          name: 'reading and hashing a 10 MB Blob, then putting it, vs only putting it',
          op: 'put of 10 MB',
          note: 'both raw: what a content key adds to a put on this machine (the floor under attachment-admit)',
        },
        figures.rawHashed,
        figures.raw,
      ),
    ]
  } finally {
    await engine.close()
    raw.close()
    await raw.delete()
  }
}

/**
 * Waits for the engine to store the search index of `sessionId` with every one of its rows: an
 * engine indexes a session it wrote to in the background, and stores the index up to a few
 * seconds after the last change, work that would otherwise run into the timed exports (at
 * 10,000 turns the last store came 2–10 s after the last append in two runs).
 */
function indexWatch(sessionId: string) {
  let stored = 0
  let waiting: { rows: number; resolve: () => void } | undefined
  return {
    onSearchIndex: (event: SearchIndexEvent) => {
      if (event.sessionId !== sessionId || event.kind !== 'persisted') return
      stored = Math.max(stored, event.rows)
      if (waiting && stored >= waiting.rows) waiting.resolve()
    },
    /** Resolves once an index of at least `rows` rows is stored (rejects after `timeoutMs`). */
    storedWith: (rows: number, timeoutMs = 60_000) =>
      new Promise<void>((resolve, reject) => {
        if (stored >= rows) return resolve()
        const timer = setTimeout(() => reject(new Error(`no index of ${rows} rows was stored`)), timeoutMs)
        waiting = {
          rows,
          resolve: () => {
            clearTimeout(timer)
            resolve()
          },
        }
      }),
  }
}

async function benchFiles(env: BenchEnv, cfg: BenchConfig): Promise<Comparison[]> {
  const sessionId = 'port-long'
  const index = indexWatch(sessionId)
  const engine = await freshEngine(env, PORT_DB.sessionline, { onSearchIndex: index.onSearchIndex })
  await engine.createSession({ id: sessionId, title: 'long' })
  for (const batch of chunks(seededTurns(1, cfg.seedTurns, 'p-'), 2000)) await engine.append(sessionId, batch)
  // The same records, prepared once for raw Dexie: what the export carries and the import writes.
  const stamper = new Stamper(sessionId, 2)
  const session = (await engine.getSession(sessionId))!
  const created = (await engine.events(sessionId, { limit: 1 }))[0] as StoredEvent
  const records: { events: StoredEvent[]; rows: SessionMessage[]; inputs: InputReceipt[] } = {
    events: [created],
    rows: [],
    inputs: [],
  }
  const rows = new Map<string, SessionMessage>()
  for (const turns of chunks(seededTurns(1, cfg.seedTurns, 'p-'), 2000)) {
    const stamped = stamper.stamp(turns, clock())
    records.events.push(...stamped.events)
    // A turn split across two chunks changes its rows in both: keep each row as it ended.
    for (const row of stamped.rows) rows.set(row.id, row)
  }
  records.rows = [...rows.values()]
  await index.storedWith(records.rows.length)
  const raw = await freshRaw(PORT_DB.raw, env.dexie)
  await raw.transaction('rw', [raw.sessions, raw.events, raw.messages], async () => {
    await raw.sessions.put({ ...session })
    await raw.events.bulkAdd(records.events)
    await raw.messages.bulkAdd(records.rows)
  })
  const exported = await engine.exportSession(sessionId)
  try {
    const exportFigures = await measureSides(
      {
        sessionline: async () => async () => timed(() => engine.exportSession(sessionId)),
        raw: async () => async () =>
          timed(() =>
            raw.transaction('r', [raw.sessions, raw.events, raw.inputs], () =>
              Promise.all([
                raw.sessions.get(sessionId),
                raw.events.where('[sessionId+seq]').between([sessionId, 0], [sessionId, Infinity]).toArray(),
                raw.inputs.where('[sessionId+seq]').between([sessionId, 0], [sessionId, Infinity]).toArray(),
              ]),
            ),
          ),
      },
      { reps: cfg.fileReps, steps: 1, warmup: true },
    )
    let target: Engine | undefined
    const importFigures = await measureSides(
      {
        sessionline: async () => {
          await target?.close()
          target = await freshEngine(env, PORT_DB.import)
          const into = target
          return async () => timed(() => into.importTranscript({ blob: exported }))
        },
        raw: async () => {
          const into = await freshRaw(`${PORT_DB.raw}-import`, env.dexie)
          return async () => {
            const ms = await timed(() =>
              into.transaction('rw', [into.sessions, into.events, into.messages], () =>
                Promise.all([
                  into.sessions.add({ ...session }),
                  into.events.bulkAdd(records.events),
                  into.messages.bulkAdd(records.rows),
                ]),
              ),
            )
            into.close()
            return ms
          }
        },
      },
      { reps: cfg.fileReps, steps: 1, warmup: true },
    )
    await target?.close()
    const turns = `${cfg.seedTurns} turns, ${records.events.length} events, ${(exported.size / 1e6).toFixed(1)} MB`
    return [
      compare(
        {
          id: 'export',
          name: `exportSession (sessionline) of a ${cfg.seedTurns}-turn session`,
          op: 'export',
          target: 1.5,
          note: `${turns}; raw: reading the session, its events and inputs in one transaction`,
        },
        exportFigures.sessionline,
        exportFigures.raw,
      ),
      compare(
        {
          id: 'import-sessionline',
          name: `importTranscript of that export into a fresh database`,
          op: 'import',
          target: 1.5,
          note: `${turns}; raw: bulk-writing the session, events and prepared rows in one transaction`,
        },
        importFigures.sessionline,
        importFigures.raw,
      ),
    ]
  } finally {
    await engine.close()
    raw.close()
  }
}
