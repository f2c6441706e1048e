import { ProviderConfig } from '../../src/index'

const STORAGE_KEY = 'sessionline-demo:provider'
export const DEFAULT_PROVIDER: ProviderConfig = { kind: 'scripted', wordDelayMs: 30, toolRate: 0.3, seed: 1 }

/**
 * The provider this page asks the worker to use: saved settings, then `?wordDelayMs=`,
 * `?toolRate=`, `?seed=` on the URL (handy for slowing the scripted model down).
 * The key of an OpenAI-compatible server is kept in this browser's localStorage only.
 */
export function initialProvider(search: URLSearchParams): ProviderConfig {
  let config = DEFAULT_PROVIDER
  try {
    const parsed = ProviderConfig.safeParse(JSON.parse(localStorage.getItem(STORAGE_KEY) ?? 'null'))
    if (parsed.success) config = parsed.data
  } catch {
    // A damaged saved value falls back to the default.
  }
  const overrides = ['wordDelayMs', 'toolRate', 'seed'].filter((name) => search.has(name))
  if (overrides.length === 0) return config
  const scripted: Record<string, unknown> =
    config.kind === 'scripted' ? { ...config } : { ...DEFAULT_PROVIDER }
  for (const name of overrides) scripted[name] = Number(search.get(name))
  const parsed = ProviderConfig.safeParse(scripted)
  return parsed.success ? parsed.data : config
}

export function describeProvider(config: ProviderConfig): string {
  if (config.kind === 'scripted') return 'Scripted model'
  if (config.kind === 'openai') return `${config.model} · ${new URL(config.baseUrl).host}`
  return 'No model'
}

export interface SettingsOptions {
  apply(config: ProviderConfig): Promise<void>
}

/** The settings dialog: scripted provider (speed, tool rate) or an OpenAI-compatible server. */
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
  }

  open(current: ProviderConfig): void {
    const field = (name: string) => this.form.elements.namedItem(name) as HTMLInputElement
    field(current.kind === 'openai' ? 'kind-openai' : 'kind-scripted').checked = true
    const scripted = current.kind === 'scripted' ? current : DEFAULT_PROVIDER
    field('wordDelayMs').value = String(scripted.kind === 'scripted' ? (scripted.wordDelayMs ?? 30) : 30)
    field('toolRate').value = String(scripted.kind === 'scripted' ? (scripted.toolRate ?? 0.3) : 0.3)
    if (current.kind === 'openai') {
      field('baseUrl').value = current.baseUrl
      field('model').value = current.model
      field('apiKey').value = current.apiKey ?? ''
    }
    this.error.textContent = ''
    this.showFields()
    this.dialog.showModal()
  }

  private read(): unknown {
    const data = new FormData(this.form)
    const text = (name: string) => String(data.get(name) ?? '').trim()
    if (data.get('kind') === 'openai') {
      const apiKey = text('apiKey')
      return { kind: 'openai', baseUrl: text('baseUrl'), model: text('model'), ...(apiKey ? { apiKey } : {}) }
    }
    return {
      kind: 'scripted',
      wordDelayMs: Number(text('wordDelayMs')),
      toolRate: Number(text('toolRate')),
      seed: 1,
    }
  }

  private showFields(): void {
    const openai = (this.form.elements.namedItem('kind-openai') as HTMLInputElement).checked
    for (const group of this.form.querySelectorAll<HTMLElement>('[data-provider]')) {
      group.hidden = group.dataset.provider !== (openai ? 'openai' : 'scripted')
    }
  }

  private async save(): Promise<void> {
    const parsed = ProviderConfig.safeParse(this.read())
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      this.error.textContent = `Check ${issue?.path.join('.') || 'the fields'}: ${issue?.message ?? 'invalid'}`
      return
    }
    try {
      await this.options.apply(parsed.data)
      localStorage.setItem(STORAGE_KEY, JSON.stringify(parsed.data))
      this.dialog.close()
    } catch (error) {
      this.error.textContent = error instanceof Error ? error.message : String(error)
    }
  }
}
