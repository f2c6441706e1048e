// The demo's service worker: precache the whole static build, then serve it cache-first so the
// playground opens with no network at all. The build replaces the placeholder below with
// `{version, files}` (see precache-plugin.ts); each build version gets its own cache.
const PRECACHE = self.__PRECACHE__
const CACHE = `sessionline-demo-${PRECACHE.version}`
const scope = self.registration.scope
const shell = new URL('index.html', scope).href

self.addEventListener('install', (event) => {
  const urls = PRECACHE.files.map((file) => new URL(file, scope).href)
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(urls))
      .then(() => self.skipWaiting()),
  )
})

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((keys) =>
        Promise.all(
          keys
            .filter((key) => key.startsWith('sessionline-demo-') && key !== CACHE)
            .map((key) => caches.delete(key)),
        ),
      )
      .then(() => self.clients.claim()),
  )
})

self.addEventListener('fetch', (event) => {
  const request = event.request
  if (request.method !== 'GET' || new URL(request.url).origin !== self.location.origin) return
  // Every navigation gets the app shell: the page reads its state from the URL and IndexedDB.
  const key = request.mode === 'navigate' ? shell : request
  event.respondWith(
    caches
      .open(CACHE)
      .then((cache) => cache.match(key, { ignoreSearch: true }))
      .then((hit) => hit ?? fetch(request)),
  )
})
