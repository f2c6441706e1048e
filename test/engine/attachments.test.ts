/**
 * Attachments (DESIGN.md §11, docs/decisions/0031) through the public API, in process and
 * through Comlink (Blobs cross by structured clone): bytes stored once per content under their
 * SHA-256, `file` parts on receipts, events and rows, limits and types refused writing nothing,
 * a quota failure leaving neither receipt nor bytes, and deletion freeing what nobody uses.
 */
import { createHash } from 'node:crypto'
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { describe, expect, test } from 'vitest'
import { createEngine } from '../../src/engine/engine'
import type { Engine } from '../../src/engine/types'
import { isSessionlineError } from '../../src/schema/errors'
import { MAX_ATTACHMENT_BYTES } from '../../src/schema/limits'
import { openDb } from '../../src/store/db'
import { type EngineFactory, engineKinds, freshDbName } from '../support/engines'

const sha = (bytes: Uint8Array | string) => createHash('sha256').update(bytes).digest('hex')
const png = (seed: number, size = 64) => new Uint8Array(size).map((_, i) => (i * 31 + seed) & 255)

/** Every row of every table of database `dbName`, by table. */
async function scan(dbName: string): Promise<Record<string, unknown[]>> {
  const db = openDb(dbName, { indexedDB, IDBKeyRange })
  try {
    await db.open()
    const out: Record<string, unknown[]> = {}
    for (const table of db.tables) out[table.name] = await table.toArray()
    return out
  } finally {
    db.close()
  }
}

async function failure(call: Promise<unknown>) {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  )
  return isSessionlineError(error) ? error.code : `not a SessionlineError: ${String(error)}`
}

async function withEngine(
  makeEngine: EngineFactory,
  run: (engine: Engine, dbName: string) => Promise<void>,
  options: Parameters<EngineFactory>[0] = {},
) {
  const { engine, dbName, close } = await makeEngine(options)
  try {
    await run(engine, dbName)
  } finally {
    await close()
  }
}

describe.each(engineKinds)('attachments %s', (_, makeEngine) => {
  test('an admitted Blob and ArrayBuffer are stored under their SHA-256 and come back as the same bytes', () =>
    withEngine(makeEngine, async (engine) => {
      const { id } = await engine.createSession()
      const a = png(1)
      const b = png(2, 300)
      const receipt = await engine.admit(id, {
        text: 'what is on these?',
        attachments: [
          { name: 'a.png', mediaType: 'image/png', data: new Blob([a], { type: 'image/png' }) },
          { name: 'b.bin', mediaType: 'Application/Octet-Stream', data: b.buffer },
        ],
      })
      expect(receipt.attachments).toEqual([
        { type: 'file', attachmentId: sha(a), name: 'a.png', mediaType: 'image/png', size: 64 },
        {
          type: 'file',
          attachmentId: sha(b),
          name: 'b.bin',
          mediaType: 'application/octet-stream',
          size: 300,
        },
      ])
      const back = await engine.attachment(sha(b))
      expect(back).toBeInstanceOf(Blob)
      expect(new Uint8Array(await (back as Blob).arrayBuffer())).toEqual(b)
      expect(back?.type).toBe('application/octet-stream')
      expect(await engine.attachment(sha('nothing'))).toBeUndefined()

      const [row] = await engine.promote(id, 'settled')
      expect(row?.parts).toEqual([
        { type: 'text', text: 'what is on these?' },
        ...(receipt.attachments ?? []),
      ])
      const events = await engine.events(id)
      const user = events.find((e) => e.type === 'user/message')
      expect(user?.type === 'user/message' && user.data.attachments).toEqual(receipt.attachments)
      // A cold read of the page gives the same row as the promotion answered.
      expect((await engine.page(id)).messages.at(-1)).toEqual(row)
    }))

  test('a file with no words is an input; its row has the file part only', () =>
    withEngine(makeEngine, async (engine) => {
      const { id } = await engine.createSession()
      const bytes = png(3)
      await engine.admit(id, {
        text: '',
        attachments: [{ name: 'shot.png', mediaType: 'image/png', data: new Blob([bytes]) }],
      })
      const [row] = await engine.promote(id, 'settled')
      expect(row?.parts).toEqual([
        { type: 'file', attachmentId: sha(bytes), name: 'shot.png', mediaType: 'image/png', size: 64 },
      ])
      expect(await failure(engine.admit(id, { text: '  ', attachments: [] }))).toBe('invalid_input')
    }))

  test('the same bytes admitted twice, in two sessions, are stored once', () =>
    withEngine(makeEngine, async (engine, dbName) => {
      const one = await engine.createSession()
      const two = await engine.createSession()
      const bytes = png(4, 1000)
      for (const s of [one.id, one.id, two.id])
        await engine.admit(s, {
          text: 'again',
          attachments: [{ name: 'x', mediaType: 'image/png', data: new Blob([bytes]) }],
        })
      const tables = await scan(dbName)
      expect(tables.attachments).toHaveLength(1)
      expect(tables.attachmentRefs).toHaveLength(2)
    }))

  test('admit stays idempotent by id with attachments, and a changed file is a conflict', () =>
    withEngine(makeEngine, async (engine) => {
      const { id } = await engine.createSession()
      const file = (seed: number) => ({ name: 'f.png', mediaType: 'image/png', data: new Blob([png(seed)]) })
      const first = await engine.admit(id, { id: 'in-1', text: 'look', attachments: [file(5)] })
      expect(await engine.admit(id, { id: 'in-1', text: 'look', attachments: [file(5)] })).toEqual(first)
      expect(await failure(engine.admit(id, { id: 'in-1', text: 'look', attachments: [file(6)] }))).toBe(
        'conflict',
      )
      expect(await failure(engine.admit(id, { id: 'in-1', text: 'look' }))).toBe('conflict')
      expect(await engine.attachment(sha(png(6)))).toBeUndefined()
    }))

  test('too big, over the input total, a type not accepted, bad data or a bad media type: invalid_input, nothing written', () =>
    withEngine(
      makeEngine,
      async (engine, dbName) => {
        const { id } = await engine.createSession()
        const before = await scan(dbName)
        const bad: unknown[] = [
          [{ name: 'big.png', mediaType: 'image/png', data: new Blob([png(1, 101)]) }],
          [
            { name: 'a.png', mediaType: 'image/png', data: new Blob([png(1, 90)]) },
            { name: 'b.png', mediaType: 'image/png', data: new Blob([png(2, 90)]) },
            { name: 'c.png', mediaType: 'image/png', data: new Blob([png(3, 90)]) },
          ],
          [{ name: 'run.exe', mediaType: 'application/x-msdownload', data: new Blob([png(1)]) }],
          [{ name: 'a.png', mediaType: 'image/png', data: 'not bytes' }],
          [{ name: 'a.png', mediaType: 'image/png', data: new Uint8Array(4) }],
          [{ name: 'a.png', mediaType: 'png', data: new Blob([png(1)]) }],
          [{ name: '', mediaType: 'image/png', data: new Blob([png(1)]) }],
          [{ name: 'a.png', mediaType: 'image/png' }],
        ]
        for (const attachments of bad) {
          const call = engine.admit(id, { text: 'x', attachments } as never)
          expect(await failure(call), JSON.stringify(attachments)).toBe('invalid_input')
        }
        expect(await scan(dbName)).toEqual(before)
      },
      { attachments: { maxFileBytes: 100, maxInputBytes: 200, mediaTypes: ['image/*', 'text/plain'] } },
    ))

  test('the default per-file limit is MAX_ATTACHMENT_BYTES', () =>
    withEngine(makeEngine, async (engine) => {
      const { id } = await engine.createSession()
      const tooBig = new Blob([new Uint8Array(MAX_ATTACHMENT_BYTES + 1)])
      const call = engine.admit(id, {
        text: 'x',
        attachments: [{ name: 'a', mediaType: 'image/png', data: tooBig }],
      })
      expect(await failure(call)).toBe('invalid_input')
    }))

  test('deleting a session frees the bytes no other session references, and keeps the shared ones', () =>
    withEngine(makeEngine, async (engine, dbName) => {
      const one = await engine.createSession()
      const two = await engine.createSession()
      const shared = png(7)
      const own = png(8)
      const file = (bytes: Uint8Array<ArrayBuffer>) => ({
        name: 'f',
        mediaType: 'image/png',
        data: new Blob([bytes]),
      })
      await engine.admit(one.id, { text: 'a', attachments: [file(shared), file(own)] })
      await engine.admit(two.id, { text: 'b', attachments: [file(shared)] })
      await engine.promote(one.id, 'settled')
      await engine.deleteSession(one.id)
      expect(await engine.attachment(sha(own))).toBeUndefined()
      expect(await engine.attachment(sha(shared))).toBeDefined()
      await engine.deleteSession(two.id)
      const tables = await scan(dbName)
      for (const [name, rows] of Object.entries(tables)) expect(rows, name).toEqual([])
    }))

  test("a fork names its source's files again, so their bytes outlive the source", () =>
    withEngine(makeEngine, async (engine, dbName) => {
      const source = await engine.createSession()
      const bytes = png(9)
      await engine.admit(source.id, {
        text: 'look',
        attachments: [{ name: 'shot.png', mediaType: 'image/png', data: new Blob([bytes]) }],
      })
      await engine.promote(source.id, 'settled')
      const fork = await engine.fork(source.id, { title: 'fork' })
      const prompt = (await engine.page(fork.id, { limit: 10 })).messages.find((r) => r.role === 'user')
      expect(prompt?.parts).toEqual([
        { type: 'text', text: 'look' },
        {
          type: 'file',
          attachmentId: sha(bytes),
          name: 'shot.png',
          mediaType: 'image/png',
          size: bytes.length,
        },
      ])
      await engine.deleteSession(source.id)
      expect(new Uint8Array(await (await engine.attachment(sha(bytes)))!.arrayBuffer())).toEqual(bytes)
      await engine.deleteSession(fork.id)
      const tables = await scan(dbName)
      expect(tables.attachments).toEqual([])
      expect(tables.attachmentRefs).toEqual([])
    }))
})

/** fake-indexeddb whose `attachments` store refuses writes the way a full disk does. */
function quotaLimitedFactory(): IDBFactory {
  const open = (name: string, version?: number) => {
    const request = indexedDB.open(name, version)
    request.addEventListener('success', () => {
      const db = request.result
      const transaction = db.transaction.bind(db)
      db.transaction = ((
        names: string | string[],
        mode?: IDBTransactionMode,
        options?: IDBTransactionOptions,
      ) => {
        const tx = transaction(names, mode, options)
        const objectStore = tx.objectStore.bind(tx)
        tx.objectStore = (storeName: string) => {
          const store = objectStore(storeName)
          if (storeName === 'attachments') {
            const full = () => {
              throw new DOMException('The quota has been exceeded.', 'QuotaExceededError')
            }
            store.add = full
            store.put = full
          }
          return store
        }
        return tx
      }) as IDBDatabase['transaction']
    })
    return request
  }
  return {
    open,
    deleteDatabase: (name: string) => indexedDB.deleteDatabase(name),
    cmp: (a: unknown, b: unknown) => indexedDB.cmp(a, b),
    databases: () => indexedDB.databases(),
  } as IDBFactory
}

test('an attachment the disk has no room for is quota_exceeded: no receipt, no bytes, earlier inputs intact', async () => {
  const dbName = freshDbName('quota')
  const engine = createEngine({ dbName, indexedDB: quotaLimitedFactory(), IDBKeyRange })
  try {
    const { id } = await engine.createSession()
    const kept = await engine.admit(id, { text: 'before' })
    const call = engine.admit(id, {
      text: 'too much',
      attachments: [{ name: 'a.png', mediaType: 'image/png', data: new Blob([png(9)]) }],
    })
    expect(await failure(call)).toBe('quota_exceeded')
    expect(await engine.pending(id)).toEqual([kept])
    const tables = await scan(dbName)
    expect(tables.attachments).toEqual([])
    expect(tables.attachmentRefs).toEqual([])
    expect(tables.inputs).toEqual([kept])
    // The session goes on: the next input without files is admitted after the one kept.
    expect((await engine.admit(id, { text: 'after' })).seq).toBe(kept.seq + 1)
  } finally {
    await engine.close()
  }
})
