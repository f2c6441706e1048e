import {
  describeSkipped,
  type FileImportReport,
  type FileImportStatus,
  type ImportFile,
  type ImportProgress,
} from '../../src/index'
import { h, setAttrs } from './dom'

export interface FolderImportOptions {
  importFiles(
    files: ImportFile[],
    onProgress: (progress: ImportProgress) => void,
  ): Promise<FileImportReport[]>
  /** A report line of a stored session was activated. */
  open(sessionId: string): void
  /** The import finished: the session list is read again before the report is shown. */
  done(): Promise<void>
  /** The title of a stored session, to label its report line. */
  titleOf(sessionId: string): string | undefined
}

/** The part of the File System Access API used here (Chromium-only, not in TypeScript's DOM lib). */
interface DirectoryHandle {
  kind: 'directory'
  name: string
  values(): AsyncIterable<DirectoryHandle | FileHandle>
}
interface FileHandle {
  kind: 'file'
  name: string
  getFile(): Promise<File>
}
type DirectoryPicker = (options?: { id?: string; mode?: 'read' }) => Promise<DirectoryHandle>

/** Folders never worth walking: they hold no session files and can be huge. */
const SKIPPED = new Set(['node_modules', '.git'])
// Every format the engine recognizes is JSON Lines; reading nothing else keeps a big folder cheap.
const isSessionFile = (name: string) => name.endsWith('.jsonl')

/** The session files under a directory handle, with paths as `webkitRelativePath` spells them. */
async function walk(directory: DirectoryHandle, prefix: string, into: ImportFile[]): Promise<void> {
  for await (const entry of directory.values()) {
    const path = `${prefix}/${entry.name}`
    if (entry.kind === 'directory') {
      if (!SKIPPED.has(entry.name)) await walk(entry, path, into)
    } else if (isSessionFile(entry.name)) {
      const file = await entry.getFile()
      into.push({ file, path, lastModified: file.lastModified })
    }
  }
}

function fromInput(files: FileList): ImportFile[] {
  return Array.from(files)
    .filter((file) => isSessionFile(file.name))
    .map((file) => ({ file, path: file.webkitRelativePath || file.name, lastModified: file.lastModified }))
}

/** Lines are listed failures first (what needs a look), the summary counts in reading order. */
const ORDER: readonly FileImportStatus[] = ['failed', 'updated', 'imported', 'unchanged']
const SUMMARY_ORDER: readonly FileImportStatus[] = ['imported', 'updated', 'unchanged', 'failed']
/** The file's name and the folder it is in: enough to find it, short enough for a line. */
const shortPath = (path: string) => path.split('/').slice(-2).join('/')
// Marks that keep a path's slashes and dots in place inside a right-to-left (start-clipped) box.
const LTR = '\u200e'

/**
 * "Import folder": a directory picker where the browser has one (`<input webkitdirectory>`
 * elsewhere), a progress bar while the worker goes through the files, then one line per file:
 * what happened to it and, for a failure, why.
 */
export class FolderImport {
  private readonly summary = h('p', { class: 'folder-report__summary', attrs: { role: 'status' } })
  private readonly progress = h('progress', { class: 'folder-report__progress', attrs: { hidden: true } })
  private readonly list = h('ul', { class: 'folder-report__list', attrs: { 'aria-label': 'Imported files' } })
  private busy = false
  private frame = 0
  private latest: ImportProgress | undefined

  constructor(
    private readonly button: HTMLButtonElement,
    private readonly input: HTMLInputElement,
    private readonly report: HTMLElement,
    private readonly options: FolderImportOptions,
  ) {
    report.append(this.summary, this.progress, this.list)
    report.hidden = true
    button.addEventListener('click', () => void this.choose())
    input.addEventListener('change', () => {
      const files = input.files ? fromInput(input.files) : []
      input.value = ''
      void this.run(files)
    })
  }

  private async choose(): Promise<void> {
    const picker = (window as { showDirectoryPicker?: DirectoryPicker }).showDirectoryPicker
    if (!picker) {
      this.input.click()
      return
    }
    let directory: DirectoryHandle
    try {
      directory = await picker({ id: 'sessionline-import', mode: 'read' })
    } catch {
      return // The picker was dismissed (AbortError) or refused.
    }
    this.show('reading', `Reading ${directory.name}…`)
    const files: ImportFile[] = []
    try {
      await walk(directory, directory.name, files)
    } catch (error) {
      this.show('done', `Could not read ${directory.name}: ${error instanceof Error ? error.message : error}`)
      return
    }
    await this.run(files)
  }

  private async run(files: ImportFile[]): Promise<void> {
    if (this.busy) return
    this.list.replaceChildren()
    if (files.length === 0) {
      this.show('done', 'No session files in that folder')
      return
    }
    this.busy = true
    this.button.disabled = true
    this.show('importing', `Importing 0 / ${files.length}…`)
    setAttrs(this.progress, { hidden: false, max: files.length, value: 0 })
    try {
      const reports = await this.options.importFiles(files, (progress) => {
        this.latest = progress
        // One paint per frame, however fast the worker reports.
        if (this.frame === 0) this.frame = requestAnimationFrame(() => this.paintProgress())
      })
      cancelAnimationFrame(this.frame)
      this.frame = 0
      await this.options.done().catch(() => undefined)
      this.renderReports(reports)
    } catch (error) {
      this.show('done', `Import failed: ${error instanceof Error ? error.message : String(error)}`)
      await this.options.done().catch(() => undefined)
    } finally {
      this.progress.hidden = true
      this.busy = false
      this.button.disabled = false
    }
  }

  private show(state: 'reading' | 'importing' | 'done', text: string): void {
    this.report.hidden = false
    this.report.dataset.state = state
    this.summary.textContent = text
  }

  private paintProgress(): void {
    this.frame = 0
    const progress = this.latest
    if (!progress) return
    this.progress.value = progress.done
    this.summary.textContent = `Importing ${progress.done} / ${progress.total}…`
  }

  private renderReports(reports: readonly FileImportReport[]): void {
    const counts = new Map<FileImportStatus, number>()
    for (const report of reports) counts.set(report.status, (counts.get(report.status) ?? 0) + 1)
    const parts = SUMMARY_ORDER.filter((status) => counts.has(status)).map(
      (status) => `${counts.get(status)} ${status}`,
    )
    const files = `${reports.length} session file${reports.length === 1 ? '' : 's'}`
    this.show('done', reports.length === 0 ? 'No session files found' : `${files} · ${parts.join(' · ')}`)
    for (const status of ORDER) this.report.dataset[status] = String(counts.get(status) ?? 0)
    const sorted = [...reports].sort(
      (a, b) => ORDER.indexOf(a.status) - ORDER.indexOf(b.status) || (a.path < b.path ? -1 : 1),
    )
    this.list.replaceChildren(...sorted.map((report) => this.line(report)))
    this.report.scrollIntoView({ block: 'nearest' })
  }

  private line(report: FileImportReport): HTMLLIElement {
    const title = report.sessionId === undefined ? undefined : this.options.titleOf(report.sessionId)
    const label =
      title === undefined
        ? h('span', {
            class: 'folder-report__label folder-report__label--path',
            text: LTR + shortPath(report.path) + LTR,
          })
        : h('span', { class: 'folder-report__label', text: title || 'Untitled' })
    const badge = h('span', { class: 'folder-report__status', text: report.status })
    const main =
      report.sessionId === undefined
        ? h('span', { class: 'folder-report__main' }, [badge, label])
        : h('button', { class: 'folder-report__main', attrs: { type: 'button' } }, [badge, label])
    const { sessionId } = report
    if (sessionId !== undefined) main.addEventListener('click', () => this.options.open(sessionId))
    const item = h('li', { class: 'folder-report__item', attrs: { title: report.path } }, [main])
    setAttrs(item, { 'data-status': report.status, 'data-path': report.path })
    const { error } = report
    if (error)
      item.append(
        h('span', { class: 'folder-report__reason', text: error.message, attrs: { title: error.message } }),
      )
    else if (report.skippedLines) {
      // Nothing left out silently: how many lines, why, and where to find them in the file.
      const text = report.skipped ? describeSkipped(report.skipped) : `${report.skippedLines} line(s) skipped`
      item.append(h('span', { class: 'folder-report__reason', text, attrs: { title: text } }))
    }
    return item
  }
}
