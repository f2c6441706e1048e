import type { Meta, StoryObj } from '@storybook/react-vite'
import { seedSession } from '../demo/seed'
import { mountParts } from './support/playground'
import { type StorySession, sessionOf, storySession } from './support/story-session'
import { Vanilla } from './support/vanilla'

const meta = {
  title: 'Playground/Turn rail',
} satisfies Meta

export default meta
type Story = StoryObj<typeof meta>

/** Seeds `turns` finished turns (demo/seed.ts: deterministic for a session id and turn count). */
const seeded =
  (turns: number) =>
  ({ client, sessionId }: StorySession) =>
    seedSession(sessionId, (events) => client.append(sessionId, events), { turns })

const railStory = (turns: number): Story => ({
  ...storySession({ title: `${turns} turns (seeded)`, prepare: seeded(turns) }),
  render: (_args, context) => (
    <Vanilla
      className="chat"
      style={{ height: '100vh' }}
      mount={(host) => mountParts(host, sessionOf(context), { rail: true })}
    />
  ),
})

/** 88 seeded turns: one mark per turn; dimmed marks are turns not loaded yet. */
export const EightyEightTurns: Story = railStory(88)

/**
 * 10,000 seeded turns, the same every time: the rail covers every turn, only the last page of
 * rows is loaded, and a mark far up pages its turn in and lands it at the top.
 */
export const TenThousandTurns: Story = railStory(10_000)
