/**
 * The jump loop behind `loadThrough(seq)`: loads older rows into the window until it covers
 * `seq` (`baseSeq <= seq`) or nothing older is left. Each load is one engine `loadThrough` (one
 * read transaction for the whole range, filled to a page boundary), so a jump is one round trip
 * unless the target moves lower while it runs. One loop runs at a time; a call while it runs
 * lowers the shared target and gets the same promise. A load that does not move the base ends
 * the loop (a stuck engine must not spin), and so does an error, softly: the promise resolves
 * and the error goes to `onError` for the snapshot to carry.
 *
 * @example
 *   const jump = createJump({ pager, onBusy: (busy) => …, onError: (error) => … })
 *   await Promise.all([jump(900), jump(400)]) // one loop, down to seq 400
 */
export interface OlderPager {
  /** Seq of the oldest loaded row (0: none loaded). */
  baseSeq(): number
  hasOlder(): boolean
  /** Fetches every row from `seq` up to the window (in one read) and merges them in. */
  loadThrough(seq: number): Promise<void>
}

export interface JumpOptions {
  pager: OlderPager
  /** While the window's first load runs, a promise of its end: a jump waits for it before it decides. */
  ready?: () => Promise<void> | undefined
  onBusy(busy: boolean): void
  onError(error: unknown): void
}

export type Jump = (seq: number) => Promise<void>

export function createJump(options: JumpOptions): Jump {
  const { pager, onBusy, onError } = options
  let target = Number.POSITIVE_INFINITY
  let running: Promise<void> | undefined

  const covered = () => !pager.hasOlder() || pager.baseSeq() <= target

  /**
   * Always yields once before it decides, so every call made in the same tick lowers the target
   * first; it clears `running` in the same step that decides to stop, so no later call can join
   * a loop that has already finished.
   */
  async function run(loading: Promise<void> | undefined, busy: boolean): Promise<void> {
    try {
      if (loading === undefined) await undefined
      else {
        try {
          await loading
        } catch {
          return // the first load failed: the snapshot already says so
        }
      }
      while (!covered()) {
        if (!busy) {
          busy = true
          onBusy(true)
        }
        const before = pager.baseSeq()
        await pager.loadThrough(target)
        if (pager.baseSeq() >= before) break // no progress: stop rather than spin
      }
    } catch (error) {
      onError(error)
    } finally {
      running = undefined
      target = Number.POSITIVE_INFINITY
      if (busy) onBusy(false)
    }
  }

  return (seq) => {
    target = Math.min(target, seq)
    if (running) return running
    const loading = options.ready?.()
    // Busy shows at once when the window is loaded and does not cover the seq yet.
    const busy = loading === undefined && !covered()
    if (busy) onBusy(true)
    running = run(loading, busy)
    return running
  }
}
