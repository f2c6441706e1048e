/**
 * Makes the playground an offline app: asks the browser to keep its storage (sessions live in
 * IndexedDB, which is evictable by default) and, in the static build, registers the Workbox
 * service worker (sw.ts) through vite-plugin-pwa's registration module. The dev server gets no
 * service worker, so it never serves stale modules.
 */
export interface OfflineOptions {
  onError(message: string): void
  /**
   * A new build is installed and waiting. `apply` lets it take over and reloads the page; the
   * session survives, since it lives in IndexedDB and its id in the URL.
   */
  onUpdate(apply: () => Promise<void>): void
}

/** How often an open tab asks whether a new build was deployed (the browser also asks on every navigation). */
const UPDATE_CHECK_MS = 60 * 60 * 1000

export async function setUpOffline(options: OfflineOptions): Promise<void> {
  try {
    if (navigator.storage && !(await navigator.storage.persisted())) await navigator.storage.persist()
  } catch {
    // Persistence is a request the browser may refuse; the app works either way.
  }
  if (!import.meta.env.PROD || !('serviceWorker' in navigator)) return
  const { registerSW } = await import('virtual:pwa-register')
  const fail = (error: unknown) =>
    options.onError(`Offline mode is unavailable: ${error instanceof Error ? error.message : String(error)}`)
  const update = registerSW({
    immediate: true,
    onNeedRefresh: () => options.onUpdate(() => update()),
    onRegisteredSW(_url, registration) {
      if (!registration) return
      const check = () => {
        if (navigator.onLine && !registration.installing) registration.update().catch(() => undefined)
      }
      setInterval(check, UPDATE_CHECK_MS)
      document.addEventListener('visibilitychange', () => document.visibilityState === 'visible' && check())
    },
    onRegisterError: fail,
  })
}
