import { PlaygroundModel } from '../models'

const STORAGE_KEY = 'sessionline-demo:provider'
export const DEFAULT_PROVIDER: PlaygroundModel = { kind: 'scripted', wordDelayMs: 30, toolRate: 0.3, seed: 1 }

/**
 * The model this page asks the worker to use: saved settings, then `?wordDelayMs=`,
 * `?toolRate=`, `?seed=` on the URL (handy for slowing the scripted model down).
 * The key of an OpenAI-compatible server (built-in or AI SDK) is kept in this origin's
 * localStorage only; the page hands it to its worker, which sends it to that server alone.
 */
export function initialProvider(search: URLSearchParams): PlaygroundModel {
  let config = DEFAULT_PROVIDER
  try {
    const parsed = PlaygroundModel.safeParse(JSON.parse(localStorage.getItem(STORAGE_KEY) ?? 'null'))
    if (parsed.success) config = parsed.data
  } catch {
    // A damaged saved value falls back to the default.
  }
  const overrides = ['wordDelayMs', 'toolRate', 'seed'].filter((name) => search.has(name))
  if (overrides.length === 0) return config
  const scripted: Record<string, unknown> =
    config.kind === 'scripted' ? { ...config } : { ...DEFAULT_PROVIDER }
  for (const name of overrides) scripted[name] = Number(search.get(name))
  const parsed = PlaygroundModel.safeParse(scripted)
  return parsed.success ? parsed.data : config
}

export function describeProvider(config: PlaygroundModel): string {
  if (config.kind === 'scripted') return 'Scripted model'
  const host = new URL(config.baseUrl).host
  return config.kind === 'ai-sdk' ? `${config.model} · AI SDK · ${host}` : `${config.model} · ${host}`
}

export interface SettingsOptions {
  apply(config: PlaygroundModel): Promise<void>
  /** The sync server's URL as typed ('' turns sync off); throws when it is not one. */
  applySync(url: string): void
}

/** What the dialog shows of sync: the server in use and the open session's id, to share. */
export interface SyncSettings {
  url: string
  sessionId: string | undefined
}

/**
 * The settings dialog: the scripted model (speed, tool rate), an OpenAI-compatible server, or an
 * AI SDK model on one; the sync server, with the open session's id to give another device.
 */
export class SettingsDialog {
  private readonly form: HTMLFormElement
  private readonly error: HTMLElement

  constructor(
    private readonly dialog: HTMLDialogElement,
    private readonly options: SettingsOptions,
  ) {
    this.form = dialog.querySelector('form')!
    this.error = dialog.querySelector('.settings__error')!
    this.form.addEventListener('change', () => this.showFields())
    this.form.addEventListener('submit', (event) => {
      event.preventDefault()
      void this.save()
    })
    dialog.querySelector('[data-action=close]')!.addEventListener('click', () => dialog.close())
    const copy = dialog.querySelector<HTMLButtonElement>('#copy-session-id')!
    copy.addEventListener('click', () => {
      const id = dialog.querySelector('#share-session-id')!.textContent ?? ''
      navigator.clipboard.writeText(id).then(
        () => {
          copy.textContent = 'Copied'
          setTimeout(() => {
            copy.textContent = 'Copy id'
          }, 1500)
        },
        // No clipboard (an insecure origin, or refused): the id is selectable text all the same.
        () => window.getSelection()?.selectAllChildren(dialog.querySelector('#share-session-id')!),
      )
    })
  }

  open(current: PlaygroundModel, sync: SyncSettings): void {
    const field = (name: string) => this.form.elements.namedItem(name) as HTMLInputElement
    field('syncUrl').value = sync.url
    this.dialog.querySelector('#share-session-id')!.textContent = sync.sessionId ?? ''
    this.dialog.querySelector<HTMLButtonElement>('#copy-session-id')!.disabled = !sync.sessionId
    field(`kind-${current.kind}`).checked = true
    const scripted = current.kind === 'scripted' ? current : DEFAULT_PROVIDER
    field('wordDelayMs').value = String(scripted.kind === 'scripted' ? (scripted.wordDelayMs ?? 30) : 30)
    field('toolRate').value = String(scripted.kind === 'scripted' ? (scripted.toolRate ?? 0.3) : 0.3)
    if (current.kind === 'openai') {
      field('baseUrl').value = current.baseUrl
      field('model').value = current.model
      field('apiKey').value = current.apiKey ?? ''
    }
    if (current.kind === 'ai-sdk') {
      field('aiBaseUrl').value = current.baseUrl
      field('aiModel').value = current.model
      field('aiApiKey').value = current.apiKey ?? ''
    }
    this.error.textContent = ''
    this.showFields()
    this.dialog.showModal()
  }

  private read(): unknown {
    const data = new FormData(this.form)
    const text = (name: string) => String(data.get(name) ?? '').trim()
    // The two server choices have fields of their own, so switching keeps what each one holds.
    const server = (fields: { baseUrl: string; model: string; apiKey: string }) => {
      const apiKey = text(fields.apiKey)
      return { baseUrl: text(fields.baseUrl), model: text(fields.model), ...(apiKey ? { apiKey } : {}) }
    }
    const kind = data.get('kind')
    if (kind === 'openai')
      return { kind, ...server({ baseUrl: 'baseUrl', model: 'model', apiKey: 'apiKey' }) }
    if (kind === 'ai-sdk')
      return { kind, ...server({ baseUrl: 'aiBaseUrl', model: 'aiModel', apiKey: 'aiApiKey' }) }
    return {
      kind: 'scripted',
      wordDelayMs: Number(text('wordDelayMs')),
      toolRate: Number(text('toolRate')),
      seed: 1,
    }
  }

  private showFields(): void {
    const checked = this.form.querySelector<HTMLInputElement>('input[name="kind"]:checked')
    const kind = checked?.value ?? 'scripted'
    for (const group of this.form.querySelectorAll<HTMLElement>('[data-provider]')) {
      group.hidden = group.dataset.provider !== kind
    }
  }

  private async save(): Promise<void> {
    const parsed = PlaygroundModel.safeParse(this.read())
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      this.error.textContent = `Check ${issue?.path.join('.') || 'the fields'}: ${issue?.message ?? 'invalid'}`
      return
    }
    try {
      this.options.applySync(String(new FormData(this.form).get('syncUrl') ?? ''))
      await this.options.apply(parsed.data)
      localStorage.setItem(STORAGE_KEY, JSON.stringify(parsed.data))
      this.dialog.close()
    } catch (error) {
      this.error.textContent = error instanceof Error ? error.message : String(error)
    }
  }
}
