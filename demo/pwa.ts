/**
 * Makes the playground an offline app: asks the browser to keep its storage (sessions live in
 * IndexedDB, which is evictable by default) and, in the static build, registers the service
 * worker that precaches every built file. The dev server gets no service worker, so it never
 * serves stale modules.
 */
export async function setUpOffline(onError: (message: string) => void): Promise<void> {
  try {
    if (navigator.storage && !(await navigator.storage.persisted())) await navigator.storage.persist()
  } catch {
    // Persistence is a request the browser may refuse; the app works either way.
  }
  if (!import.meta.env.PROD || !('serviceWorker' in navigator)) return
  try {
    await navigator.serviceWorker.register('./sw.js')
  } catch (error) {
    onError(`Offline mode is unavailable: ${error instanceof Error ? error.message : String(error)}`)
  }
}
