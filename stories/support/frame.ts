/** Calls `render` at most once per animation frame, as the playground does; `cancel` stops it. */
export function frameScheduler(render: () => void): { schedule(): void; cancel(): void } {
  let frame = 0
  return {
    schedule() {
      if (frame === 0)
        frame = requestAnimationFrame(() => {
          frame = 0
          render()
        })
    },
    cancel() {
      cancelAnimationFrame(frame)
      frame = 0
    },
  }
}
