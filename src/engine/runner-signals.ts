/**
 * What the engine tells its runner outside the log: that a session has new input to take, and
 * that another engine asked to stop a turn. Listeners are called in the order they were added; a
 * listener added or removed while others are told is not affected until the next signal.
 *
 * @example
 *   const signals = createRunnerSignals()
 *   const off = signals.onInput((sessionId) => wake(sessionId))
 *   signals.input('s1')
 */
import type { Unsubscribe } from './types'

export function createRunnerSignals() {
  const inputListeners = new Set<(sessionId: string) => void>()
  const stopListeners = new Set<(sessionId: string, turn: number) => void>()
  return {
    /** A session has new input (or an input turned steer): every input listener is told. */
    input(sessionId: string): void {
      for (const listener of [...inputListeners]) {
        try {
          listener(sessionId)
        } catch {
          // A listener's failure is its own; the input is durable either way.
        }
      }
    },
    /** Another engine asks the runner of turn `turn` of the session to stop it. */
    stop(sessionId: string, turn: number): void {
      for (const listener of [...stopListeners]) listener(sessionId, turn)
    },
    onInput(listener: (sessionId: string) => void): Unsubscribe {
      inputListeners.add(listener)
      return () => {
        inputListeners.delete(listener)
      }
    },
    onStop(listener: (sessionId: string, turn: number) => void): Unsubscribe {
      stopListeners.add(listener)
      return () => {
        stopListeners.delete(listener)
      }
    },
  }
}
