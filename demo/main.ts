import {
  type AttachmentUrls,
  attachmentUrls,
  connect,
  type Delivery,
  describeSkipped,
  isSessionlineError,
  type RailItem,
  type SearchHit,
  type SessionInfo,
  type SessionView,
  type TimelineSnapshot,
} from '../src/index'
import { replacedBy, siblingOf } from './history/tree'
import type { PlaygroundConfigure, PlaygroundModel } from './models'
import { setUpOffline } from './pwa'
import { seedSession } from './seed'
import { describeSync, parseSyncUrl, SyncFollower, savedSyncUrl, saveSyncUrl, syncDetail } from './sync'
import { Composer } from './ui/composer'
import { whenIdle } from './ui/dom'
import { Drawer } from './ui/drawer'
import { FolderImport } from './ui/folder-import'
import { ImportZone } from './ui/import-zone'
import { warmUpMarkdown } from './ui/markdown-view'
import { OpenSyncedDialog } from './ui/open-synced'
import { QueueTray } from './ui/queue-tray'
import { Rail } from './ui/rail'
import { refreshAttachmentImages, setAttachmentUrls } from './ui/row'
import { SearchBox } from './ui/search'
import { SessionList } from './ui/session-list'
import { describeProvider, initialProvider, SettingsDialog } from './ui/settings'
import { StoragePanel } from './ui/storage-panel'
import { Transcript } from './ui/transcript'

const $ = <T extends HTMLElement = HTMLElement>(selector: string): T => {
  const element = document.querySelector<T>(selector)
  if (!element) throw new Error(`missing ${selector}`)
  return element
}

// --- the library: one worker owns the database, the page only renders snapshots ---
// Given a factory, the client replaces a worker that dies (the browser may end one at any time):
// views re-open and inputs it never acknowledged are sent again. With the engine's database named,
// a session's first screen is read on the page while the worker starts (docs/decisions/0038).
let worker: Worker | undefined
let workersStarted = 0
const client = connect(
  () => {
    workersStarted++
    // A replacement worker syncs nothing yet: the open session's sync starts again there.
    if (workersStarted > 1) queueMicrotask(() => void syncFollower.lost().then(schedule))
    worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module', name: 'sessionline' })
    worker.addEventListener('error', (event) =>
      showNotice(`The worker stopped: ${event.message || 'failed to start'}`),
    )
    return worker
  },
  { dbName: 'sessionline' },
)

let provider = initialProvider(new URLSearchParams(location.search))
let sessions: SessionInfo[] = []
let view: SessionView | undefined
/** Object URLs of the open view's images, read from the engine (they outlive the page that pasted them). */
let urls: AttachmentUrls | undefined
let unsubscribe: (() => void) | undefined
/** Turn whose rows a rail jump is loading. */
let jumpingTurn: number | undefined
/** The sync server from Settings ('' = sync off). */
let syncUrl = savedSyncUrl()

// --- notices: every failure ends up here, never as an uncaught error ---
const notice = $('#notice')
function showNotice(message: string | undefined): void {
  notice.textContent = message ?? ''
  notice.hidden = !message
}
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))
const report = (what: string) => (error: unknown) => showNotice(`${what}: ${messageOf(error)}`)

// --- rendering: state changes only schedule; one render per animation frame ---
let frame = 0
function schedule(): void {
  if (frame === 0) frame = requestAnimationFrame(render)
}
function render(): void {
  if (frame !== 0) cancelAnimationFrame(frame)
  frame = 0
  if (!view) return
  const snapshot = view.getSnapshot()
  // While a jump pages older rows in, the rows are rendered once, when they are all there.
  if (jumpingTurn === undefined) transcript.render(snapshot.rows)
  transcript.setWindow(snapshot)
  tray.render(snapshot.queued)
  const readOnly = readOnlyNote(view.sessionId)
  composer.setState({
    enabled: snapshot.status !== 'error' && snapshot.status !== 'upgraded' && readOnly === undefined,
    running: readOnly === undefined && isRunning(snapshot),
    ...(readOnly ? { placeholder: readOnly } : {}),
  })
  // An imported session is compacted once it is continued (its fork is native and writable).
  $<HTMLButtonElement>('#compact-session').disabled = readOnly !== undefined
  rail.update({
    items: snapshot.rail,
    before: snapshot.outlineBefore,
    current: transcript.readingTurn(),
    busy: jumpingTurn,
  })
  renderSync(snapshot)
  if (snapshot.error) showNotice(snapshot.error.message)
}

// --- sync: the open session syncs with the server in Settings (sync.ts says why only that one) ---
const syncFollower = new SyncFollower(client, (target, error) => {
  if (view?.sessionId === target.sessionId) showNotice(`Could not sync this session: ${messageOf(error)}`)
})
const syncBadge = $('#sync-status')

/** Syncs the open session when a server is set and the session is native (an import is read-only). */
function followOpenSession(): void {
  const id = view?.sessionId
  const target = syncUrl && id && readOnlyNote(id) === undefined ? { sessionId: id, url: syncUrl } : undefined
  void syncFollower.follow(target).then(schedule)
}

function renderSync(snapshot: TimelineSnapshot): void {
  const target = syncFollower.current
  // A loop just started has said nothing yet: it is pulling.
  const status =
    target && target.sessionId === view?.sessionId
      ? (snapshot.sync ?? { state: 'pulling', pending: 0 })
      : undefined
  syncBadge.hidden = status === undefined
  if (!status || !target) return
  syncBadge.textContent = describeSync(status)
  syncBadge.dataset.state = status.state
  syncBadge.dataset.pending = String(status.pending)
  syncBadge.title = syncDetail(status, target.url)
}

/**
 * Opens a session another device shares: pulled from `text` (a URL, which becomes the sync
 * server once the session is here) when it is not here yet. Throws when the server has no such
 * session or cannot be reached; the settings are then left as they were.
 */
async function openSynced(id: string, text: string): Promise<void> {
  const url = parseSyncUrl(text)
  if (!url) throw new Error('Enter the sync server URL.')
  if (!sessions.some((s) => s.id === id)) {
    const status = await client.sync(id, { url })
    await refreshSessions()
    if (!sessions.some((s) => s.id === id)) {
      await client.unsync(id)
      if (status.state === 'offline') throw new Error(`${url} did not answer; is the sync server running?`)
      throw new Error(`No session ${id} on ${url}${status.error ? ` (${status.error.message})` : ''}`)
    }
  }
  syncUrl = saveSyncUrl(url)
  await openSession(id)
  followOpenSession() // already open: under the URL given now
}

/** A session named by the URL: opened, or pulled from the sync server when it is not here. */
async function openById(id: string): Promise<void> {
  if (sessions.some((s) => s.id === id) || !syncUrl) return openSession(id)
  await openSynced(id, syncUrl)
}

const PROVIDER_NAMES = { pi: 'Pi', claude: 'Claude Code', codex: 'Codex' } as const

/** Imported sessions are histories another tool wrote: the engine refuses input to them. */
function readOnlyNote(sessionId: string): string | undefined {
  const source = sessions.find((s) => s.id === sessionId)?.source
  if (source === undefined || source === 'native') return undefined
  return `Imported from ${PROVIDER_NAMES[source]}: read-only`
}

/** A turn is running while its newest row is the prompt, a streaming answer or a running tool. */
function isRunning(snapshot: TimelineSnapshot): boolean {
  for (let i = snapshot.rows.length - 1; i >= 0; i--) {
    const row = snapshot.rows[i]!
    if (row.kind !== 'message') continue
    const { message } = row
    if (message.status === 'streaming') return true
    if (message.role === 'user') return message.status === 'complete'
    return message.parts.some(
      (part) => part.type === 'tool' && (part.state === 'running' || part.state === 'awaiting-approval'),
    )
  }
  return false
}

// --- components ---
const transcriptHost = $('#transcript-host')
const transcript = new Transcript(transcriptHost, {
  loadOlder: () => void view?.loadOlder().catch(report('Could not load older messages')),
  onScroll: schedule,
  retry: (input) =>
    void view?.admit(input.text, { id: input.id, delivery: input.delivery }).catch(report('Still not sent')),
  loadGap: (key, end) => void view?.loadGap(key, end).catch(report('Could not load the hidden turns')),
  turnsIn: (fromSeq, toSeq) => turnsBetween(fromSeq, toSeq),
  respond: (callId, answer) =>
    void view?.respondToApproval(callId, answer).catch(report('Could not answer the tool call')),
  queueInstead: (inputId) => changeDelivery(inputId, 'queue'),
  history: {
    editable: () => view !== undefined && readOnlyNote(view.sessionId) === undefined,
    resend: (messageId, text) =>
      onOpen((id) => client.resend(id, messageId, { text }), 'Could not resend', true),
    regenerate: (messageId) => onOpen((id) => client.regenerate(id, messageId), 'Could not regenerate', true),
    rewind: (messageId) =>
      onOpen(async (id) => {
        const { text } = await client.rewind(id, messageId)
        composer.setText(text)
      }, 'Could not rewind'),
    switchBranch: (messageId, step) =>
      onOpen(async (id) => {
        const sibling = await siblingOf(client, id, messageId, step)
        if (sibling) await client.switchBranch(id, sibling)
      }, 'Could not switch branches'),
    replaced: (summary) => (view ? replacedBy(client, view.sessionId, summary.id) : Promise.resolve([])),
  },
})

/**
 * Runs a history verb on the open session. The view follows the head by itself (a moved head
 * resets its watch), so nothing is re-read here; a failure becomes a notice.
 */
function onOpen(verb: (sessionId: string) => Promise<unknown>, failure: string, follow = false): void {
  if (!view) return
  // A verb that starts a turn follows its answer; the others leave the reader where they are.
  verb(view.sessionId).then(() => follow && transcript.followTail(), report(failure))
}

/** Moves a pending input between the steers and the queue; the view shows it moved at once. */
function changeDelivery(inputId: string, delivery: Delivery): void {
  void view
    ?.setDelivery(inputId, delivery)
    .catch(report(delivery === 'steer' ? 'Could not steer' : 'Could not queue it instead'))
}

/** "Continue in a new session": the visible path, under new ids, in a native (writable) session. */
async function forkSession(): Promise<void> {
  if (!view) return
  const source = sessions.find((s) => s.id === view?.sessionId)
  const fork = await client.fork(view.sessionId, { title: `${source?.title || 'Session'} (continued)` })
  await refreshSessions()
  await openSession(fork.id)
  composer.focus()
}

/** The session whose summary the model is writing, while it writes (Compact then stops it). */
let compacting: string | undefined

/**
 * Compact: a summary replaces the whole visible path. The person types it, or leaves it empty
 * and the model writes it; while it writes, the button stops it, and a stopped or outrun
 * compaction changes nothing (docs/decisions/0033, amendment), which the notice says.
 */
async function compactSession(): Promise<void> {
  if (!view) return
  if (compacting !== undefined) {
    await client.interrupt(compacting)
    return
  }
  const typed = prompt(
    'Summary of the conversation so far (it replaces the history the model sees). Leave it empty and the model writes one:',
  )
  if (typed === null) return
  if (typed.trim() !== '') {
    await client.compact(view.sessionId, { summary: typed })
    return
  }
  const sessionId = view.sessionId
  const button = $<HTMLButtonElement>('#compact-session')
  compacting = sessionId
  button.textContent = 'Stop compacting'
  button.setAttribute('aria-busy', 'true')
  try {
    await client.compact(sessionId)
  } catch (error) {
    if (!isSessionlineError(error) || (error.code !== 'aborted' && error.code !== 'conflict')) throw error
    showNotice(
      error.code === 'aborted'
        ? 'Compaction stopped: nothing changed.'
        : 'The session moved on while the summary was written: nothing changed.',
    )
  } finally {
    compacting = undefined
    button.textContent = 'Compact'
    button.removeAttribute('aria-busy')
  }
}

/** Turns of the open session that start within `fromSeq..toSeq` (what a gap hides). */
function turnsBetween(fromSeq: number, toSeq: number): number {
  const outline = view?.getSnapshot().outline ?? []
  let count = 0
  for (const entry of outline) if (entry.seq >= fromSeq && entry.seq <= toSeq) count++
  return count
}
const rail = new Rail($('#rail'), {
  activate: (item) => void jump(item).catch(report('Could not jump')),
  loadBefore: (position) => void view?.loadOutline(position).catch(report('Could not load the turn rail')),
})
const tray = new QueueTray($('#queue-tray'), {
  cancel: (id) => void view?.cancel(id).catch(report('Could not cancel')),
  edit: (id, text) => void view?.edit(id, text).catch(report('Could not edit')),
  // The view puts the input in its new place at once, in the engine's order.
  reorder: (id, before) => void view?.reorder(id, { before }).catch(report('Could not reorder the queue')),
  steer: (id) => changeDelivery(id, 'steer'),
})
const composer = new Composer(
  {
    form: $<HTMLFormElement>('#composer'),
    input: $<HTMLTextAreaElement>('#composer-input'),
    queue: $<HTMLButtonElement>('#queue'),
    stop: $<HTMLButtonElement>('#stop'),
  },
  { send, stop: () => void view?.interrupt().catch(report('Could not stop')) },
)
const sessionList = new SessionList($('#session-list'), {
  select: (id) => void openSession(id),
  remove: (session) => void removeSession(session).catch(report('Could not delete the session')),
  exportSession: (session) => void exportSession(session).catch(report('Could not export the session')),
})

/** Saves the session as a `sessionline` file; dropping it on the import zone restores it whole. */
async function exportSession(session: SessionInfo): Promise<void> {
  const file = await client.exportSession(session.id)
  download(file, `${(session.title || 'session').replace(/[^\w .-]+/g, '_')}.sessionline.jsonl`)
}

const storagePanel = new StoragePanel($('#storage-panel'), {
  read: () => client.storage(),
  persist: () => client.persist(),
  titleOf: (id) => sessions.find((s) => s.id === id)?.title || 'Untitled',
  exportAll: () => exportAllSessions().catch(report('Could not export the sessions')),
})

/**
 * Saves every session in one file: their `sessionline` exports back to back, which an import
 * restores all together or not at all (docs/decisions/0032, amendment).
 */
async function exportAllSessions(): Promise<void> {
  const all = await client.listSessions()
  if (all.length === 0) return showNotice('There are no sessions to export.')
  const files: Blob[] = []
  for (const session of all) files.push(await client.exportSession(session.id))
  download(
    new Blob(files, { type: 'application/jsonl' }),
    `sessions-${new Date().toISOString().slice(0, 10)}.sessionline.jsonl`,
  )
}

function download(file: Blob, name: string): void {
  const link = document.createElement('a')
  link.href = URL.createObjectURL(file)
  link.download = name
  link.click()
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000)
}
// A database the browser emptied since the last visit is said so, not shown as an empty app.
void client
  .storage()
  .then((s) => {
    if (s.evicted) showNotice("Your browser deleted this site's data since your last visit.")
  })
  .catch(() => undefined)
const settings = new SettingsDialog($<HTMLDialogElement>('#settings'), {
  apply: applyProvider,
  applySync(text) {
    const url = saveSyncUrl(text)
    if (url === syncUrl) return
    syncUrl = url
    followOpenSession()
  },
})
const openSyncedDialog = new OpenSyncedDialog($<HTMLDialogElement>('#open-synced-dialog'), {
  open: openSynced,
})
const searchBox = new SearchBox($<HTMLDialogElement>('#search'), {
  search: (query) => client.search(query, { limit: 30 }),
  titleOf: (id) => sessions.find((s) => s.id === id)?.title ?? 'Session',
  choose: (hit) => void openHit(hit).catch(report('Could not open the match')),
})

/** Resolves once `target` has loaded (or failed to). */
function loaded(target: SessionView): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (target.getSnapshot().status === 'loading') return
      stop()
      resolve()
    }
    const stop = target.subscribe(check)
    check()
  })
}

/**
 * A search hit was chosen: its session opens, `jumpTo` loads the hit's neighbourhood (not the
 * history in between), and the row lands near the top, highlighted. The time from choosing to
 * landing is left on the document for the browser tests.
 */
async function openHit(hit: SearchHit): Promise<void> {
  const started = performance.now()
  if (view?.sessionId !== hit.sessionId) await openSession(hit.sessionId)
  const target = view
  if (!target) return
  await loaded(target)
  transcript.release()
  jumpingTurn = hit.turn
  render()
  try {
    await target.jumpTo(hit.seq)
  } finally {
    jumpingTurn = undefined
  }
  if (target !== view) return
  render()
  if (transcript.land(hit.messageId)) transcript.highlight(hit.messageId)
  else showNotice(`The match in turn ${hit.turn} could not be shown`)
  document.documentElement.dataset.landedMs = (performance.now() - started).toFixed(1)
  schedule()
}

function send(text: string, delivery: Delivery, files: readonly File[]): void {
  if (!view) return
  // A pasted screenshot has no name and sometimes no type: it still gets both.
  const attachments = files.map((file, i) => ({
    name: file.name || `pasted-${i + 1}.${(file.type.split('/')[1] ?? 'bin').replace(/[^a-z0-9]/gi, '')}`,
    mediaType: file.type || 'application/octet-stream',
    data: file,
  }))
  // Not awaited: the row is already in the snapshot; a failure marks it `failed` with a retry.
  view.admit(text, { delivery, ...(attachments.length > 0 && { attachments }) }).catch(report('Not sent'))
  transcript.followTail()
}

/**
 * A rail mark was activated. A loaded turn is a scroll; an unloaded one is loaded first with
 * `jumpTo` (its neighbourhood only, with a gap to the rest), rendered, and only then measured,
 * so the landing needs no height estimate.
 */
async function jump(item: RailItem): Promise<void> {
  const target = view
  if (!target) return
  transcript.release()
  if (item.kind === 'loaded') {
    transcript.land(item.key)
    schedule()
    return
  }
  jumpingTurn = item.turn
  render() // shows the mark busy now, not a frame later
  try {
    await target.jumpTo(item.seq)
  } finally {
    jumpingTurn = undefined
  }
  if (target !== view) return
  render()
  const landed = target.getSnapshot().rail.find((entry) => entry.turn === item.turn)
  if (landed?.kind === 'loaded') transcript.land(landed.key)
  else showNotice(`Turn ${item.turn} could not be loaded`)
  schedule()
}

// --- sessions ---
const sessionTitle = $('#session-title')
const sessionIdFromUrl = () => /^#\/session\/(.+)$/.exec(location.hash)?.[1]

async function refreshSessions(): Promise<void> {
  sessions = await client.listSessions()
  sessionList.render(sessions, view?.sessionId)
}

async function openSession(id: string, reopen = false): Promise<void> {
  if (view?.sessionId === id && !reopen) return
  unsubscribe?.()
  view?.dispose()
  urls?.dispose()
  transcript.reset()
  jumpingTurn = undefined
  const opened = client.open(id, { includeInactive: showSuperseded.checked })
  view = opened
  unsubscribe = opened.subscribe(schedule)
  urls = attachmentUrls(opened, client)
  urls.subscribe(() => refreshAttachmentImages(transcriptHost))
  setAttachmentUrls(urls)
  const session = sessions.find((s) => s.id === id)
  sessionTitle.textContent = session?.title ?? 'Session'
  if (sessionIdFromUrl() !== id)
    history.replaceState(null, '', `${location.pathname}${location.search}#/session/${id}`)
  localStorage.setItem('sessionline-demo:last', id)
  sessionList.render(sessions, id)
  showNotice(undefined)
  followOpenSession()
  render()
}

// --- transcript import ---
const importStatus = $('#import-status')
const showSuperseded = $<HTMLInputElement>('#show-superseded')
new ImportZone($('#dropzone'), $<HTMLInputElement>('#import-file'), {
  async importFile(file) {
    importStatus.textContent = `Importing ${file.name}…`
    try {
      const session = await client.importTranscript({ blob: file, name: file.name })
      const skipped = describeSkipped(session.origin?.skipped ?? [])
      importStatus.textContent = skipped ? `Imported ${file.name} (${skipped})` : `Imported ${file.name}`
      await refreshSessions()
      await openSession(session.id, true)
    } catch (error) {
      importStatus.textContent = `${file.name}: ${messageOf(error)}`
    }
  },
})
// A whole sessions folder (Pi, Claude Code, Codex): unchanged files are skipped on a re-import.
new FolderImport(
  $<HTMLButtonElement>('#import-folder'),
  $<HTMLInputElement>('#import-folder-input'),
  $('#folder-report'),
  {
    importFiles: (files, onProgress) => client.importFiles(files, onProgress),
    open: (id) => void openSession(id, true),
    done: () => refreshSessions().catch(report('Could not list the sessions')),
    titleOf: (id) => sessions.find((session) => session.id === id)?.title,
  },
)
// Superseded rows (abandoned branches, history replaced by compaction) are read only on request.
showSuperseded.addEventListener('change', () => {
  if (view) void openSession(view.sessionId, true)
})

async function newSession(title = `Session ${sessions.length + 1}`): Promise<void> {
  const session = await client.createSession({ title })
  await refreshSessions()
  await openSession(session.id)
  composer.focus()
}

async function removeSession(session: SessionInfo): Promise<void> {
  if (!confirm(`Delete “${session.title}”? This cannot be undone.`)) return
  if (view?.sessionId === session.id) {
    unsubscribe?.()
    view.dispose()
    view = undefined
    urls?.dispose()
    urls = undefined
    setAttachmentUrls(undefined)
    transcript.reset()
    followOpenSession()
  }
  await client.deleteSession(session.id)
  await refreshSessions()
  if (!view) {
    const next = sessions[0]
    if (next) await openSession(next.id)
    else await newSession()
  }
}

// --- seeding long sessions (the worker does the writing, in large batches) ---
const seedStatus = $('#seed-status')
async function seed(turns: number): Promise<void> {
  const buttons = document.querySelectorAll<HTMLButtonElement>('[data-seed]')
  buttons.forEach((button) => {
    button.disabled = true
  })
  const label = turns.toLocaleString('en-US')
  try {
    const session = await client.createSession({ title: `${label} turns (seeded)` })
    const started = performance.now()
    await seedSession(session.id, (events) => client.append(session.id, events), {
      turns,
      onProgress: (written) => {
        seedStatus.textContent = `Writing… ${written.toLocaleString('en-US')} / ${label} turns`
      },
    })
    const seconds = (performance.now() - started) / 1000
    seedStatus.textContent = `Wrote ${label} turns in ${seconds.toFixed(1)} s`
    seedStatus.dataset.seconds = seconds.toFixed(3)
    await refreshSessions()
    await openSession(session.id)
  } catch (error) {
    seedStatus.textContent = `Seeding failed: ${messageOf(error)}`
  } finally {
    buttons.forEach((button) => {
      button.disabled = false
    })
  }
}

// --- provider settings ---
const providerLabel = $('#provider-label')
/** The playground worker's `configure` also takes an AI SDK model (worker.ts, models.ts). */
const configureWorker = client.configure as (request: PlaygroundConfigure) => Promise<void>
async function applyProvider(config: PlaygroundModel): Promise<void> {
  await configureWorker({ provider: config })
  provider = config
  providerLabel.textContent = describeProvider(config)
}

// --- wiring ---
new Drawer({
  app: $('.app'),
  sidebar: $('#sidebar'),
  toggle: $<HTMLButtonElement>('#open-sessions'),
  backdrop: $('#drawer-backdrop'),
  main: $('#chat'),
})
$('#new-session').addEventListener(
  'click',
  () => void newSession().catch(report('Could not create a session')),
)
$('#open-settings').addEventListener('click', () => {
  settings.open(provider, { url: syncUrl, sessionId: view?.sessionId })
  void storagePanel.refresh().catch(report('Could not read the storage figures'))
})
$('#open-search').addEventListener('click', () => searchBox.open())
$('#open-synced').addEventListener('click', () => openSyncedDialog.open(syncUrl))
// Back online: the open session's sync starts again now, not when its backoff ends.
window.addEventListener('online', () => {
  if (view?.getSnapshot().sync?.state === 'offline') void syncFollower.restart().then(schedule)
})
$('#fork-session').addEventListener('click', () => void forkSession().catch(report('Could not fork')))
$('#compact-session').addEventListener(
  'click',
  () => void compactSession().catch(report('Could not compact')),
)
for (const button of document.querySelectorAll<HTMLButtonElement>('[data-seed]')) {
  button.addEventListener('click', () => void seed(Number(button.dataset.seed)))
}
window.addEventListener('hashchange', () => {
  const id = sessionIdFromUrl()
  if (id && id !== view?.sessionId) void openById(id).catch(report('Could not open the session'))
})
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible') void refreshSessions().catch(() => undefined)
})

// --- a new build deployed: offered, never forced (it would reload under a running turn) ---
const updatePrompt = $('#update-prompt')
function offerUpdate(apply: () => Promise<void>): void {
  updatePrompt.hidden = false
  $('#update-reload').onclick = () => {
    $<HTMLButtonElement>('#update-reload').disabled = true
    apply().catch(report('The new version could not be loaded'))
  }
  $('#update-later').onclick = () => {
    updatePrompt.hidden = true
  }
}
document.documentElement.dataset.build = __DEMO_BUILD__
$('#build').textContent = `Playground build ${__DEMO_BUILD__}`

async function start(): Promise<void> {
  void setUpOffline({ onError: showNotice, onUpdate: offerUpdate })
  await applyProvider(provider).catch(report('The model settings were not applied'))
  await refreshSessions()
  const wanted = sessionIdFromUrl() ?? localStorage.getItem('sessionline-demo:last') ?? undefined
  // A link to a session another device syncs: pulled from the sync server.
  const linked = sessionIdFromUrl()
  if (linked && syncUrl && !sessions.some((s) => s.id === linked))
    await openSynced(linked, syncUrl).catch(report('Could not open the synced session'))
  const first = sessions.find((s) => s.id === wanted) ?? sessions[0]
  if (view) {
    // The linked session is open.
  } else if (first) await openSession(first.id)
  else await newSession('First session')
  document.documentElement.dataset.ready = 'true'
  whenIdle(warmUpMarkdown)
}

// A handle for poking at the engine from the console (and for the browser tests): the client
// and the open session's id. The library itself exposes nothing on `window`.
declare global {
  interface Window {
    __sessionline?: {
      client: typeof client
      readonly sessionId: string | undefined
      /** Ends the worker as a browser would (no event); the client starts a fresh one. */
      killWorker(): void
      /** Workers started so far. */
      readonly workers: number
    }
  }
}
window.__sessionline = {
  client,
  get sessionId() {
    return view?.sessionId
  },
  killWorker: () => worker?.terminate(),
  get workers() {
    return workersStarted
  },
}

start().catch(report('The playground could not start'))
