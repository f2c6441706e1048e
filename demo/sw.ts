// The playground's service worker, built by vite-plugin-pwa (injectManifest): Workbox precaches
// every built file under its own revision (content-hashed names need none), so a new build
// downloads only what changed, and a failed download keeps the previous build whole.
import {
  cleanupOutdatedCaches,
  createHandlerBoundToURL,
  type PrecacheEntry,
  precacheAndRoute,
} from 'workbox-precaching'
import { NavigationRoute, registerRoute } from 'workbox-routing'

// The page's lib is DOM, not WebWorker (both at once conflict): name only what is used here.
declare const self: {
  __WB_MANIFEST: Array<PrecacheEntry | string>
  skipWaiting(): Promise<void>
  addEventListener(type: 'message', listener: (event: MessageEvent<unknown>) => void): void
}

precacheAndRoute(self.__WB_MANIFEST)
cleanupOutdatedCaches()

// Every navigation gets the app shell, with or without network: the page reads which session
// to show from its URL and the sessions themselves from IndexedDB.
registerRoute(new NavigationRoute(createHandlerBoundToURL('index.html')))

// A new build waits until the reader accepts the "update available" prompt (pwa.ts): taking
// over an open page would swap its code under a running turn.
self.addEventListener('message', (event) => {
  const data = event.data as { type?: unknown } | null
  if (data?.type === 'SKIP_WAITING') void self.skipWaiting()
})
