/**
 * What the import-fidelity tests share: the fixture readers, a row's text and tool parts, and
 * engines on fake-indexeddb that close after each test.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { IDBKeyRange, indexedDB } from 'fake-indexeddb'
import { afterEach } from 'vitest'
import { createEngine } from '../../src/engine/engine'
import type { Engine } from '../../src/engine/types'
import type { SessionMessage, ToolPart } from '../../src/schema/messages'
import { ownFixtures, sharedTranscripts } from './fixture-paths'

/** A vendored real file (test/import/fixtures/real), by its path there. */
export const real = (name: string) => readFileSync(path.join(sharedTranscripts, name), 'utf8')
/** A file written for these tests (test/import/fixtures/written). */
export const written = (name: string) => readFileSync(path.join(ownFixtures, 'written', name), 'utf8')

/** A row's text parts, joined. */
export const textOf = (row: SessionMessage) =>
  row.parts
    .filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join('\n')

/** Every tool part of the rows, in order. */
export const toolParts = (rows: readonly SessionMessage[]) =>
  rows.flatMap((r) => r.parts.filter((p): p is ToolPart => p.type === 'tool'))

/** A factory of engines, each on a database of its own, closed after each test of the file. */
export function engineFactory(prefix: string): () => Engine {
  let count = 0
  const engines: Engine[] = []
  afterEach(async () => {
    for (const engine of engines.splice(0)) await engine.close()
  })
  return () => {
    const engine = createEngine({
      dbName: `${prefix}-${++count}`,
      indexedDB,
      IDBKeyRange,
      broadcast: false,
      now: () => 1_800_000_000_000,
    })
    engines.push(engine)
    return engine
  }
}
