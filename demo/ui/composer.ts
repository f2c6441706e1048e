import type { Delivery } from '../../src/index'

/** What the composer asks for when the session takes input. */
const DEFAULT_PLACEHOLDER = 'Message the agent…'

export interface ComposerOptions {
  send(text: string, delivery: Delivery): void
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

  private submit(delivery: Delivery): void {
    const { input } = this.elements
    const text = input.value
    if (text.trim() === '' || input.disabled) return
    input.value = ''
    this.options.send(text, delivery)
  }
}
