import type { Loader, StoryContext } from '@storybook/react-vite'
import { connect, type ScriptedProviderConfig, type SessionlineClient } from '../../src/index'

/**
 * What a story runs on: its own worker over its own database, a session with a fixed id, and the
 * seeded scripted model, so the same story renders the same rows every time.
 */
export interface StorySession {
  client: SessionlineClient
  sessionId: string
  dbName: string
  worker: Worker
}

export interface StorySessionOptions {
  /** The scripted model's settings (seed 7, 25 ms per word and no tool calls unless told). */
  model?: Partial<Omit<ScriptedProviderConfig, 'kind'>>
  title?: string
  /** Writes into the fresh session before the story renders (seeded turns, queued inputs). */
  prepare?: (session: StorySession) => Promise<void>
}

export const STORY_SESSION_ID = 'story-session'

export async function openStorySession(options: StorySessionOptions = {}): Promise<StorySession> {
  const dbName = `sessionline-story-${crypto.randomUUID()}`
  const worker = new Worker(new URL('./story.worker.ts', import.meta.url), { type: 'module', name: dbName })
  const client = connect(worker)
  const session: StorySession = { client, sessionId: STORY_SESSION_ID, dbName, worker }
  try {
    await client.configure({
      provider: { kind: 'scripted', seed: 7, wordDelayMs: 25, toolRate: 0, ...options.model },
    })
    await client.createSession({ id: STORY_SESSION_ID, title: options.title ?? 'Story session' })
    await options.prepare?.(session)
    return session
  } catch (error) {
    await closeStorySession(session)
    throw error
  }
}

/** Stops the worker (which closes its engine and database connection) and deletes the database. */
export async function closeStorySession(session: StorySession): Promise<void> {
  await session.client.close()
  session.worker.terminate()
  await new Promise<void>((done) => {
    const request = indexedDB.deleteDatabase(session.dbName)
    request.onsuccess = () => done()
    request.onerror = () => done()
  })
}

/** The session a story's loader opened (see `storySession`). */
export function sessionOf(context: Pick<StoryContext, 'loaded'>): StorySession {
  const session = (context.loaded as { session?: StorySession }).session
  if (!session) throw new Error('this story has no session: add ...storySession() to its meta')
  return session
}

/**
 * The loader and `beforeEach` a story (or meta) spreads in: the loader opens the session before
 * the story renders; `beforeEach`, which Storybook runs after the loaders, returns the cleanup
 * that ends the worker and deletes the database once the story unmounts.
 */
export function storySession(options: StorySessionOptions = {}): {
  loaders: Loader[]
  beforeEach: (context: StoryContext) => () => Promise<void>
} {
  return {
    loaders: [async () => ({ session: await openStorySession(options) })],
    beforeEach: (context) => {
      const session = sessionOf(context)
      return () => closeStorySession(session)
    },
  }
}
