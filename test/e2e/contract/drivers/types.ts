/**
 * The one surface every browser driver gives the contract scenarios, so each scenario is
 * written once: tabs that load a URL and call the page's `window.contract`, reload, close; and
 * a browser that opens tabs and can be closed and relaunched on the same profile.
 */

export interface Tab {
  /** Calls `window.contract.call(method, args)` in the page; throws with the page's message when it fails. */
  call<T = unknown>(method: string, args?: unknown): Promise<T>
  goto(url: string): Promise<void>
  reload(): Promise<void>
  close(): Promise<void>
}

export interface BrowserSession {
  newTab(url: string): Promise<Tab>
  /** Closes the browser and starts it again on the same profile (tabs opened before are gone). */
  relaunch(): Promise<void>
  close(): Promise<void>
}

export interface BrowserKind {
  name: 'chromium' | 'firefox' | 'webkit'
  /** Storage is per origin, port included: each browser has its own fixed port. */
  port: number
  /** Why this browser cannot run here, or undefined when it can. */
  missing(): string | undefined
  launch(profileDir: string): Promise<BrowserSession>
}

export type Answer<T> = { ok: true; value: T } | { ok: false; error: string }

export function unwrap<T>(method: string, answer: Answer<T> | null | undefined): T {
  if (!answer) throw new Error(`contract.${method}: the page gave no answer`)
  if (!answer.ok) throw new Error(`contract.${method}: ${answer.error}`)
  return answer.value
}

/** Waits until the page's script has installed `window.contract` (module scripts run after load). */
export async function waitContract(probe: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000
  while (!(await probe().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what}: window.contract never appeared`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
