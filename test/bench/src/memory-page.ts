/**
 * Seeds the long session and measures the heap, in a page of its own per side. The heap is read
 * here and not in the worker because `performance.memory` exists only on Window; the runner
 * starts Chromium with `--enable-precise-memory-info` and `--js-flags=--expose-gc`.
 */
import { BenchConfig } from './config'
import type { BenchEnv } from './env'
import { type HeapProbe, seedLongSession } from './seed'

interface ChromeMemory {
  usedJSHeapSize: number
}
// Read afresh every time: each `performance.memory` is a snapshot that never updates.
const usedHeap = () => (performance as Performance & { memory?: ChromeMemory }).memory?.usedJSHeapSize
const gc = (globalThis as { gc?: () => void }).gc

const heap: HeapProbe | undefined =
  usedHeap() !== undefined && gc
    ? {
        async measure() {
          // Until two readings agree: what a closed engine or connection leaves is only freed
          // once its last IndexedDB callbacks and timers ran, a few tasks later. Measured too
          // early, that garbage counted against the next figure and made it negative.
          let last = Number.POSITIVE_INFINITY
          for (let round = 0; round < 8; round++) {
            gc()
            await new Promise((resolve) => setTimeout(resolve, 50))
            gc()
            const now = usedHeap() ?? 0
            if (Math.abs(last - now) < 64 * 1024) return now
            last = now
          }
          return last
        },
      }
    : undefined

const env: BenchEnv = {
  // The browser's own IndexedDB, named explicitly for both sides.
  dexie: { indexedDB, IDBKeyRange },
  engine: { indexedDB, IDBKeyRange },
  log: (message) => console.info(`[bench memory] ${message}`),
  objectStore: IDBObjectStore,
}

const seed = (side: 'sessionline' | 'raw', config: unknown) =>
  seedLongSession(env, side, BenchConfig.parse(config), heap)

declare global {
  interface Window {
    seedBench?: { seed: typeof seed; heapAvailable: boolean }
  }
}
window.seedBench = { seed, heapAvailable: heap !== undefined }
document.getElementById('status')!.textContent = 'ready'
