import type { Delivery } from '../../src/index'

/** What the composer asks for when the session takes input. */
const DEFAULT_PLACEHOLDER = 'Message the agent…'

export interface ComposerOptions {
  /** `files`: pasted or dropped into the composer, shown as thumbnails until sent. */
  send(text: string, delivery: Delivery, files: readonly File[]): void
  stop(): void
}

export interface ComposerElements {
  form: HTMLFormElement
  input: HTMLTextAreaElement
  queue: HTMLButtonElement
  stop: HTMLButtonElement
}

/**
 * The composer. Enter steers the running turn (or starts one), Ctrl/Cmd+Enter queues a new
 * turn, Shift+Enter breaks the line. Sending happens inside the key handler, so the optimistic
 * row is in the snapshot before the next frame.
 */
export class Composer {
  private files: File[] = []
  private readonly tray = document.createElement('ul')
  private readonly urls = new Map<File, string>()

  constructor(
    private readonly elements: ComposerElements,
    private readonly options: ComposerOptions,
  ) {
    const { form, input, queue, stop } = elements
    input.addEventListener('keydown', (event) => {
      if (event.key !== 'Enter' || event.isComposing || event.shiftKey || event.altKey) return
      event.preventDefault()
      this.submit(event.ctrlKey || event.metaKey ? 'queue' : 'steer')
    })
    form.addEventListener('submit', (event) => {
      event.preventDefault()
      this.submit('steer')
    })
    queue.addEventListener('click', () => this.submit('queue'))
    stop.addEventListener('click', () => this.options.stop())
    // Files pasted (a screenshot) or dropped on the composer wait beside it as thumbnails.
    this.tray.className = 'composer__files'
    this.tray.hidden = true
    form.prepend(this.tray)
    input.addEventListener('paste', (event) => {
      const pasted = [...(event.clipboardData?.files ?? [])]
      if (pasted.length === 0) return
      event.preventDefault()
      this.addFiles(pasted)
    })
    form.addEventListener('dragover', (event) => {
      if (event.dataTransfer?.types.includes('Files')) event.preventDefault()
    })
    form.addEventListener('drop', (event) => {
      const dropped = [...(event.dataTransfer?.files ?? [])]
      if (dropped.length === 0) return
      event.preventDefault()
      this.addFiles(dropped)
    })
  }

  /** Adds files to send with the next message (also what a test or a file picker calls). */
  addFiles(files: readonly File[]): void {
    this.files.push(...files)
    this.renderFiles()
  }

  private renderFiles(): void {
    const items = this.files.map((file, index) => {
      const item = document.createElement('li')
      item.className = 'composer__file'
      if (file.type.startsWith('image/')) {
        let url = this.urls.get(file)
        if (!url) {
          url = URL.createObjectURL(file)
          this.urls.set(file, url)
        }
        const img = document.createElement('img')
        img.src = url
        img.alt = file.name || 'pasted image'
        item.append(img)
      } else item.append(document.createTextNode(file.name || file.type || 'file'))
      const remove = document.createElement('button')
      remove.type = 'button'
      remove.className = 'link-button'
      remove.textContent = '×'
      remove.title = `Remove ${file.name || 'this file'}`
      remove.addEventListener('click', () => {
        this.files.splice(index, 1)
        this.renderFiles()
      })
      item.append(remove)
      return item
    })
    // Thumbnails of files no longer waiting are released.
    for (const [file, url] of this.urls)
      if (!this.files.includes(file)) {
        URL.revokeObjectURL(url)
        this.urls.delete(file)
      }
    this.tray.replaceChildren(...items)
    this.tray.hidden = items.length === 0
  }

  /** `placeholder` replaces the usual prompt while it is given (a read-only session says so). */
  setState(state: { enabled: boolean; running: boolean; placeholder?: string }): void {
    const { input, queue, stop, form } = this.elements
    input.placeholder = state.placeholder ?? DEFAULT_PLACEHOLDER
    input.disabled = !state.enabled
    queue.disabled = !state.enabled
    ;(form.querySelector('button[type=submit]') as HTMLButtonElement).disabled = !state.enabled
    stop.disabled = !state.running
  }

  focus(): void {
    this.elements.input.focus()
  }

  /** Puts `text` in the input for the person to edit and send (a rewound prompt), and focuses it. */
  setText(text: string): void {
    this.elements.input.value = text
    this.elements.input.dispatchEvent(new Event('input'))
    this.focus()
  }

  private submit(delivery: Delivery): void {
    const { input } = this.elements
    const text = input.value
    if ((text.trim() === '' && this.files.length === 0) || input.disabled) return
    input.value = ''
    const files = this.files
    this.files = []
    this.renderFiles()
    this.options.send(text, delivery, files)
  }
}
