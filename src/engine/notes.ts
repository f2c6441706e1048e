/**
 * Commit notes between engines on one database (docs/decisions/0006): a BroadcastChannel named
 * after the database, opened on first use (a post, or a session gaining a watcher), so an
 * engine that only reads never pays for one.
 *
 * @example
 *   const notes = createNotes('sessionline', (note) => catchUpIfWatched(note))
 *   notes.post({ sessionId, rev })
 */

/** What one engine tells the others after a commit. */
export interface CommitNote {
  sessionId: string
  rev: number
  deleted?: boolean
}

/**
 * A Stop pressed in one engine for a turn another engine's runner may be running: the runner
 * that runs turn `stopTurn` of the session aborts it as its own Stop would.
 */
export interface StopNote {
  sessionId: string
  stopTurn: number
}

/** Everything engines on one database tell each other. */
export type Note = CommitNote | StopNote

/** Whether `note` asks for a stop (else it reports a commit). */
export const isStopNote = (note: Note): note is StopNote => typeof (note as StopNote).stopTurn === 'number'

export interface Notes {
  post(note: Note): void
  /** Starts listening (idempotent). */
  listen(): void
  close(): void
}

/** Notes over a BroadcastChannel, or a silent stand-in where there is none (or `enabled` is false). */
export function createNotes(dbName: string, onNote: (note: Note) => void, enabled = true): Notes {
  if (!enabled || typeof BroadcastChannel !== 'function') return { post() {}, listen() {}, close() {} }
  let channel: BroadcastChannel | undefined
  let closed = false
  const open = (): BroadcastChannel | undefined => {
    if (closed) return undefined
    if (!channel) {
      channel = new BroadcastChannel(`sessionline:${dbName}`)
      channel.addEventListener('message', (message: MessageEvent<Note>) => onNote(message.data))
    }
    return channel
  }
  return {
    post: (note) => open()?.postMessage(note),
    listen: () => {
      open()
    },
    close() {
      closed = true
      channel?.close()
      channel = undefined
    },
  }
}
