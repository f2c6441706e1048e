/**
 * The measuring worker: a dedicated module worker, where an app runs sessionline's engine. The
 * page posts `{id, method, args}` and gets `{id, answer}` back (no Comlink: nothing here should
 * cost what the stores do not).
 */
import { detectFeatures } from './features'
import { type Content, indexedDbStore, type OpfsWriter, opfsStore, type Store } from './stores'

export type SideName = 'indexeddb' | OpfsWriter

export interface MeasureArgs {
  bytes: number
  reps: number
  /** The OPFS writers to measure beside IndexedDB (those the browser has). */
  writers: OpfsWriter[]
}

/** One side's timings per repetition (ms; null where that repetition failed, its error in `errors`). */
export interface SideTimes {
  write: (number | null)[]
  /** The part of `write` until the file was written and closed (OPFS only). */
  file: (number | null)[]
  /** The part of `write` spent in the sync access handle's `flush()`. */
  flush: (number | null)[]
  readBlob: (number | null)[]
  readBytes: (number | null)[]
  delete: (number | null)[]
  errors: string[]
}

export interface MeasureResult {
  bytes: number
  reps: number
  /** Which side went first in each repetition (the order rotates). */
  firsts: SideName[]
  sides: Partial<Record<SideName, SideTimes>>
}

const message = (error: unknown) =>
  error instanceof Error ? `${error.name}: ${error.message}` : String(error)

/** `size` bytes nobody has stored (random, so nothing below can compress them), and their SHA-256. */
async function freshContent(size: number): Promise<Content> {
  const bytes = new Uint8Array(size)
  for (let at = 0; at < size; at += 65_536)
    crypto.getRandomValues(bytes.subarray(at, Math.min(size, at + 65_536)))
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))
  const id = Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('')
  return { id, bytes, blob: new Blob([bytes], { type: 'application/octet-stream' }) }
}

function sameBytes(read: ArrayBuffer, bytes: Uint8Array): void {
  if (read.byteLength !== bytes.length) throw new Error(`read ${read.byteLength} bytes of ${bytes.length}`)
  const back = new Uint8Array(read)
  for (let i = 0; i < back.length; i += 4093) if (back[i] !== bytes[i]) throw new Error(`byte ${i} differs`)
  if (back[back.length - 1] !== bytes[bytes.length - 1]) throw new Error('last byte differs')
}

const emptyTimes = (): SideTimes => ({
  write: [],
  file: [],
  flush: [],
  readBlob: [],
  readBytes: [],
  delete: [],
  errors: [],
})

/**
 * Writes, reads back and deletes fresh content on each side, phase by phase (every side writes,
 * then every side reads, then every side deletes), the side that goes first rotating per
 * repetition, so the machine's load lands on all alike. One untimed warm-up repetition comes first.
 * The OPFS sides each have a folder and a database of their own.
 */
async function measure({ bytes, reps, writers }: MeasureArgs): Promise<MeasureResult> {
  const names: SideName[] = ['indexeddb', ...writers]
  const stores = {} as Record<SideName, Store>
  const times = {} as Record<SideName, SideTimes>
  for (const name of names) {
    stores[name] = name === 'indexeddb' ? await indexedDbStore() : await opfsStore(name)
    times[name] = emptyTimes()
  }
  const firsts: SideName[] = []
  try {
    for (let rep = -1; rep < reps; rep++) {
      const content = await freshContent(bytes)
      const shift = (rep + names.length) % names.length
      const order = [...names.slice(shift), ...names.slice(0, shift)]
      if (rep >= 0) firsts.push(order[0]!)
      const keep = (name: SideName, key: keyof Omit<SideTimes, 'errors'>, value: number | null) => {
        if (rep >= 0) times[name][key].push(value)
      }
      const attempt = async <T>(name: SideName, run: () => Promise<T>): Promise<T | null> => {
        try {
          return await run()
        } catch (error) {
          times[name].errors.push(`rep ${rep}: ${message(error)}`)
          return null
        }
      }
      for (const name of order) {
        const w = await attempt(name, () => stores[name].write(content))
        keep(name, 'write', w?.ms ?? null)
        keep(name, 'file', w?.file ?? null)
        keep(name, 'flush', w?.flush ?? null)
      }
      for (const name of order) {
        const r = await attempt(name, () => stores[name].read(content.id))
        const checked = r && (await attempt(name, async () => sameBytes(r.data, content.bytes))) !== null
        keep(name, 'readBlob', checked ? r.blob : null)
        keep(name, 'readBytes', checked ? r.bytes : null)
      }
      for (const name of order)
        keep(name, 'delete', await attempt(name, () => stores[name].delete(content.id)))
    }
  } finally {
    for (const name of names) await stores[name].close()
  }
  return { bytes, reps, firsts, sides: times }
}

const methods: Record<string, (args: never) => Promise<unknown>> = {
  features: detectFeatures,
  measure,
}

self.onmessage = async (event: MessageEvent<{ id: number; method: string; args: unknown }>) => {
  const { id, method, args } = event.data
  try {
    const run = methods[method]
    if (!run) throw new Error(`no method ${method}`)
    self.postMessage({ id, answer: { ok: true, value: await run(args as never) } })
  } catch (error) {
    self.postMessage({ id, answer: { ok: false, error: message(error) } })
  }
}
