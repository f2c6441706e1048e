import type { StorageReport } from '../../src/index'
import { h } from './dom'

export interface StoragePanelOptions {
  read(): Promise<StorageReport>
  persist(): Promise<boolean>
  titleOf(sessionId: string): string
  /** Saves every session in one `sessionline` file (importing it restores them all). */
  exportAll(): Promise<void>
}

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(bytes < 10 * 1024 * 1024 ? 2 : 1)} MB`

/**
 * The Settings dialog's storage section: what the site uses of its quota, whether the browser
 * promised to keep it ("Keep data on this device" asks), and what each session takes.
 */
export class StoragePanel {
  private readonly summary = h('p', { class: 'settings__note' })
  private readonly keep = h('input', { attrs: { type: 'checkbox', id: 'keep-data' } }) as HTMLInputElement
  private readonly list = h('ul', { class: 'storage__sessions' })
  private readonly exportAll = h('button', {
    class: 'button button--quiet',
    text: 'Export all sessions',
    attrs: { type: 'button', id: 'export-all' },
  }) as HTMLButtonElement

  constructor(
    host: HTMLElement,
    private readonly options: StoragePanelOptions,
  ) {
    const label = h('label', {}, [this.keep, h('span', { text: ' Keep data on this device' })])
    host.append(
      h('h2', { class: 'settings__title', text: 'Storage' }),
      this.summary,
      label,
      this.list,
      this.exportAll,
    )
    this.exportAll.addEventListener('click', () => {
      this.exportAll.disabled = true
      void options.exportAll().finally(() => {
        this.exportAll.disabled = false
      })
    })
    this.keep.addEventListener('change', () => {
      if (!this.keep.checked) return // the browser offers no way back: only asking
      void options.persist().then((kept) => {
        this.keep.checked = kept
        if (!kept) this.summary.textContent = `${this.summary.textContent} The browser declined to keep it.`
      })
    })
  }

  async refresh(): Promise<void> {
    const report = await this.options.read()
    this.summary.textContent =
      report.quota > 0
        ? `This site uses ${megabytes(report.usage)} of ${megabytes(report.quota)}.`
        : 'This browser does not say how much this site uses.'
    this.keep.checked = report.persisted
    this.keep.disabled = report.persisted
    this.list.replaceChildren(
      ...report.sessions.map((s) =>
        h('li', { text: `${this.options.titleOf(s.sessionId)}: ${megabytes(s.bytes)}` }),
      ),
    )
  }
}
