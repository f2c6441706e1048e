export interface DrawerParts {
  app: HTMLElement
  sidebar: HTMLElement
  /** The menu button that opens it (shown on narrow screens only). */
  toggle: HTMLButtonElement
  /** Dims the chat behind the open drawer; a click on it closes. */
  backdrop: HTMLElement
  /** The rest of the page, made inert while the drawer is open. */
  main: HTMLElement
}

/**
 * On narrow screens the session sidebar becomes a drawer over the chat: the menu button opens
 * it with focus on the open session, Escape or the backdrop closes it and focus goes back to
 * the button, and choosing a session closes it. Wider screens never see it closed.
 */
export class Drawer {
  private readonly narrow = matchMedia('(max-width: 720px)')

  constructor(private readonly parts: DrawerParts) {
    const { sidebar, toggle, backdrop } = parts
    toggle.addEventListener('click', () => (this.isOpen ? this.close() : this.open()))
    backdrop.addEventListener('click', () => this.close())
    document.addEventListener('keydown', (event) => {
      if (event.key === 'Escape' && this.isOpen && !event.defaultPrevented) {
        event.preventDefault()
        this.close()
      }
    })
    // Choosing a session is what the drawer was opened for.
    sidebar.addEventListener('click', (event) => {
      const target = event.target as Element
      if (target.closest('#new-session, .sessions__open, .folder-report__main')) this.close()
    })
    this.narrow.addEventListener('change', () => {
      if (!this.narrow.matches) this.close(false)
    })
  }

  get isOpen(): boolean {
    return this.parts.app.dataset.drawer === 'open'
  }

  open(): void {
    const { app, sidebar, toggle, main } = this.parts
    app.dataset.drawer = 'open'
    toggle.setAttribute('aria-expanded', 'true')
    main.inert = true
    const target =
      sidebar.querySelector<HTMLElement>('.sessions__open[aria-current]') ??
      sidebar.querySelector<HTMLElement>('button, input, [tabindex]')
    target?.focus()
  }

  close(restoreFocus = true): void {
    if (!this.isOpen) return
    const { app, toggle, main } = this.parts
    delete app.dataset.drawer
    toggle.setAttribute('aria-expanded', 'false')
    main.inert = false
    if (restoreFocus) toggle.focus()
  }
}
