import { type CSSProperties, useEffect, useRef } from 'react'

/**
 * Mounts a piece of the vanilla-DOM playground into a React story: `mount` gets an empty host
 * element and returns what undoes it, which runs when the story unmounts.
 */
export function Vanilla({
  mount,
  className,
  style,
}: {
  mount: (host: HTMLElement) => (() => void) | undefined
  className?: string
  style?: CSSProperties
}) {
  const host = useRef<HTMLDivElement>(null)
  const latest = useRef(mount)
  latest.current = mount
  useEffect(() => {
    const element = host.current
    if (!element) return
    const undo = latest.current(element)
    return () => {
      undo?.()
      element.replaceChildren()
    }
  }, [])
  return <div ref={host} className={className} style={style} />
}
