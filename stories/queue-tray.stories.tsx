import type { Meta, StoryObj } from '@storybook/react-vite'
import { mountParts } from './support/playground'
import { sessionOf, storySession } from './support/story-session'
import { Vanilla } from './support/vanilla'

const meta = {
  title: 'Playground/Queue tray',
} satisfies Meta

export default meta
type Story = StoryObj<typeof meta>

/**
 * A slow turn is running; three inputs queued behind it wait in the tray ("queued · 3"), each
 * editable and cancellable, and run one turn each once the turn before them ends.
 */
export const QueuedBehindARunningTurn: Story = {
  ...storySession({ model: { wordDelayMs: 150 } }),
  render: (_args, context) => (
    <Vanilla
      className="chat"
      style={{ height: '100vh' }}
      mount={(host) =>
        mountParts(host, sessionOf(context), {
          tray: true,
          start: (view) => {
            const report = (error: unknown) => console.warn('admit failed:', error)
            view.admit('Summarize the retry policy', { delivery: 'steer' }).catch(report)
            for (const text of [
              'Then list its edge cases',
              'Suggest a test for each',
              'Draft the commit message',
            ])
              view.admit(text, { delivery: 'queue' }).catch(report)
          },
        })
      }
    />
  ),
}
