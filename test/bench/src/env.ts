/** What every suite shares: where IndexedDB comes from, the database names, fresh ids. */

import type { Engine } from '../../../src/engine/types'
import { createEngine, type EngineOptions } from '../../../src/index'
import { type DexieEnv, openRaw } from './raw'

export interface BenchEnv {
  dexie: DexieEnv
  /** What every engine of the run gets besides its database name (Node: fake-indexeddb). */
  engine: Pick<EngineOptions, 'indexedDB' | 'IDBKeyRange'>
  log(message: string): void
  /** The object store class whose put and add (8) counts bytes through. */
  objectStore: { prototype: IDBObjectStore }
}

/** Database names, one per side; the long session has its own pair so writes never touch it. */
export const DB = {
  writesSl: 'bench-writes-sessionline',
  writesRaw: 'bench-writes-raw',
  longSl: 'bench-long-sessionline',
  longRaw: 'bench-long-raw',
  streamPage: 'bench-stream-page',
} as const
export const LONG_SESSION = 'long'

export const clock = () => Date.now()

/** An engine on an empty database of that name (any previous one is deleted first). */
export async function freshEngine(
  env: BenchEnv,
  dbName: string,
  options: Pick<EngineOptions, 'onSearchIndex'> = {},
): Promise<Engine> {
  await openRaw(dbName, env.dexie).delete()
  return createEngine({ ...env.engine, ...options, dbName })
}

export const openEngine = (env: BenchEnv, dbName: string): Engine => createEngine({ ...env.engine, dbName })

let sessions = 0
/** A session id no repetition has used. */
export const newSessionId = (what: string, rep: number) => `${what}-${rep < 0 ? 'warm' : rep}-${++sessions}`
