export interface OpenSyncedOptions {
  /** Pulls the session from the server and opens it; throws (shown in the dialog) when it cannot. */
  open(sessionId: string, url: string): Promise<void>
}

/** A session id, or the playground link another device copied (`…#/session/<id>`). */
export function sessionIdOf(text: string): string {
  const trimmed = text.trim()
  return /#\/session\/([^/?#\s]+)$/.exec(trimmed)?.[1] ?? trimmed
}

/**
 * "Open a synced session": the id another device shares, and the sync server (the saved one
 * unless changed). The dialog stays open with the reason when the server has no such session.
 */
export class OpenSyncedDialog {
  private readonly form: HTMLFormElement
  private readonly error: HTMLElement
  private readonly submit: HTMLButtonElement

  constructor(
    private readonly dialog: HTMLDialogElement,
    private readonly options: OpenSyncedOptions,
  ) {
    this.form = dialog.querySelector('form')!
    this.error = dialog.querySelector('.settings__error')!
    this.submit = dialog.querySelector('button[type=submit]')!
    this.form.addEventListener('submit', (event) => {
      event.preventDefault()
      void this.openSession()
    })
    dialog.querySelector('[data-action=close]')!.addEventListener('click', () => dialog.close())
  }

  open(url: string): void {
    this.field('sessionId').value = ''
    this.field('syncUrl').value = url
    this.error.textContent = ''
    this.submit.disabled = false
    this.dialog.showModal()
    this.field(url ? 'sessionId' : 'syncUrl').focus()
  }

  private field(name: string): HTMLInputElement {
    return this.form.elements.namedItem(name) as HTMLInputElement
  }

  private async openSession(): Promise<void> {
    const id = sessionIdOf(this.field('sessionId').value)
    const url = this.field('syncUrl').value.trim()
    const missing = id === '' ? 'the id of the session to open' : url === '' ? 'the sync server URL' : ''
    this.error.textContent = missing && `Enter ${missing}.`
    if (missing) return
    this.submit.disabled = true
    try {
      await this.options.open(id, url)
      this.dialog.close()
    } catch (error) {
      this.error.textContent = error instanceof Error ? error.message : String(error)
    } finally {
      this.submit.disabled = false
    }
  }
}
