import type { Meta, StoryObj } from '@storybook/react-vite'
import { isSessionlineError } from '../src/index'
import { answeredTurn, mountParts } from './support/playground'
import { type StorySession, sessionOf, storySession } from './support/story-session'
import { Vanilla } from './support/vanilla'

const meta = {
  title: 'Playground/History',
} satisfies Meta

export default meta
type Story = StoryObj<typeof meta>

/** The parts with the history controls, over the story's session. */
const withHistory =
  (tray = false) =>
  (_args: unknown, context: Parameters<typeof sessionOf>[0]) => (
    <Vanilla
      className="chat"
      style={{ height: '100vh' }}
      mount={(host) => mountParts(host, sessionOf(context), { history: true, tray })}
    />
  )

/** Two finished turns written directly (no model call), so the story renders the same every time. */
async function twoTurns({ client, sessionId }: StorySession): Promise<void> {
  await client.append(sessionId, [
    ...answeredTurn(1, 'What is a history tree?', 'Every row hangs under the row shown before it.'),
    ...answeredTurn(2, 'And a branch?', 'Siblings: rows with the same parent.'),
  ])
}

/**
 * The second prompt was edited twice: it has three versions, the newest shown ("3 / 3"). The
 * arrows step between them (switchBranch); Edit, Rewind and Regenerate are on the rows.
 */
export const BranchPicker: Story = {
  ...storySession({
    model: { wordDelayMs: 0 },
    prepare: async (session) => {
      await twoTurns(session)
      const { client, sessionId } = session
      await client.resend(sessionId, 'story-t2-u', { text: 'And a branch, briefly?', id: 'story-edit-1' })
      await client.resend(sessionId, 'story-edit-1', {
        text: 'And a branch, in one line?',
        id: 'story-edit-2',
      })
    },
  }),
  render: withHistory(),
}

/**
 * Both turns were compacted into a summary; "What it replaced" opens the rows it stands for,
 * which the model no longer gets.
 */
export const CompactedRegion: Story = {
  ...storySession({
    prepare: async (session) => {
      await twoTurns(session)
      await session.client.compact(session.sessionId, {
        summary: 'We defined **history trees** and branches.',
      })
    },
  }),
  render: withHistory(),
}

/**
 * A compaction the model was writing was stopped (`interrupt`) while its summary streamed. The
 * summary is written in one commit at its end, so the stop leaves nothing behind: no summary row,
 * both turns shown, and the model still gets them. The story renders only if the compaction
 * ended `aborted`.
 */
export const AbortedCompaction: Story = {
  ...storySession({
    // Slow enough that the stop lands while the summary streams.
    model: { wordDelayMs: 500 },
    prepare: async (session) => {
      await twoTurns(session)
      const { client, sessionId } = session
      // The outcome is read from the start: a rejection handled only later would be reported
      // as unhandled while the stop is awaited.
      const outcome = client.compact(sessionId).then(
        () => 'compacted',
        (error: unknown) => (isSessionlineError(error) ? error.code : String(error)),
      )
      await new Promise((resolve) => setTimeout(resolve, 300))
      await client.interrupt(sessionId)
      const ended = await outcome
      if (ended !== 'aborted') throw new Error(`the compaction ended ${ended}, not aborted`)
      const { rows } = await client.context(sessionId)
      if (rows.length !== 4) throw new Error(`the model gets ${rows.length} rows, not the 4 shown`)
    },
  }),
  render: withHistory(),
}

/**
 * A slow turn runs with three inputs queued behind it; the last was moved to the front, so the
 * tray shows the engine's order, not the order they were typed in. ↑/↓, Alt+arrows and a drag
 * move them; Steer sends one into the running turn.
 */
export const ReorderedTray: Story = {
  ...storySession({
    model: { wordDelayMs: 400 },
    prepare: async ({ client, sessionId }) => {
      await client.admit(sessionId, { id: 'story-run', text: 'Write a long essay', delivery: 'queue' })
      for (const [id, text] of [
        ['story-q1', 'Then list its edge cases'],
        ['story-q2', 'Suggest a test for each'],
        ['story-q3', 'Draft the commit message'],
      ])
        await client.admit(sessionId, { id, text, delivery: 'queue' })
      await client.reorder(sessionId, 'story-q3', { before: 'story-q1' })
    },
  }),
  render: withHistory(true),
}
