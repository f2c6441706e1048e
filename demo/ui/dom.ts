/**
 * The one way this demo makes elements. Text goes in through `textContent` only: message text
 * is user and model output, and must never be parsed as HTML.
 */
export interface ElementProps {
  class?: string
  text?: string
  attrs?: Record<string, string | number | boolean | undefined>
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: ElementProps = {},
  children: readonly Node[] = [],
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag)
  if (props.class) element.className = props.class
  if (props.text !== undefined) element.textContent = props.text
  if (props.attrs) setAttrs(element, props.attrs)
  for (const child of children) element.append(child)
  return element
}

/** Sets or removes attributes: `false`/`undefined` removes, `true` sets an empty value. */
export function setAttrs(
  element: Element,
  attrs: Record<string, string | number | boolean | undefined>,
): void {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) element.removeAttribute(name)
    else element.setAttribute(name, value === true ? '' : String(value))
  }
}

/** Writes text only when it changed, so a streaming row does not churn its siblings. */
export function setText(node: Node, text: string): void {
  if (node.textContent !== text) node.textContent = text
}

export function toggleClass(element: Element, name: string, on: boolean): void {
  if (element.classList.contains(name) !== on) element.classList.toggle(name, on)
}

/** Runs `task` once the page is idle; where there is no `requestIdleCallback` (WebKit), soon after. */
export function whenIdle(task: () => void): void {
  if (typeof requestIdleCallback === 'function') requestIdleCallback(() => task(), { timeout: 2_000 })
  else setTimeout(task, 200)
}
