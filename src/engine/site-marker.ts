/**
 * A note kept outside IndexedDB that this site's database held sessions (README, "Attachments,
 * export and storage"). A database found empty while the note says it held sessions was
 * emptied by the browser (eviction, cleared site data for IndexedDB alone, a profile reset),
 * not by the app: `storage()` says `evicted`, so the app can tell the user instead of showing an
 * empty app. The default note is an entry in the Cache API, which workers can reach; where a
 * browser clears every kind of site storage at once (Safari's seven-day rule, "Clear site
 * data") the note goes too and nothing can be told.
 *
 * @example
 *   createEngine({ marker: memoryMarker() }) // tests; `marker: false` turns the check off
 */

/** Where the note is kept. */
export interface SiteMarker {
  /** Whether the note says the database held sessions. */
  held(): Promise<boolean>
  /** Writes (`true`) or clears (`false`) the note. */
  set(held: boolean): Promise<void>
}

type CacheStorageLike = {
  open(name: string): Promise<{
    match(url: string): Promise<unknown>
    put(url: string, response: Response): Promise<void>
    delete(url: string): Promise<boolean>
  }>
}

const CACHE_NAME = 'sessionline-marker'

/** The note as a Cache API entry of database `dbName`; undefined where there is no Cache API. */
export function cacheMarker(dbName: string): SiteMarker | undefined {
  const caches = (globalThis as { caches?: CacheStorageLike }).caches
  if (!caches || typeof Response === 'undefined') return undefined
  // A same-origin path no server serves; only its presence matters.
  const url = `/__sessionline__/${encodeURIComponent(dbName)}`
  return {
    async held() {
      return (await (await caches.open(CACHE_NAME)).match(url)) !== undefined
    },
    async set(held) {
      const cache = await caches.open(CACHE_NAME)
      if (held) await cache.put(url, new Response('held'))
      else await cache.delete(url)
    },
  }
}

/** A note in memory, shared by the engines it is given to (tests; one realm only). */
export function memoryMarker(): SiteMarker {
  let note = false
  return {
    held: async () => note,
    async set(held) {
      note = held
    },
  }
}
