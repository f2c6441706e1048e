import type { Meta, StoryObj } from '@storybook/react-vite'
import { answeredTurn, mountParts } from './support/playground'
import { sessionOf, storySession } from './support/story-session'
import { Vanilla } from './support/vanilla'

const meta = {
  title: 'Playground/Transcript',
} satisfies Meta

export default meta
type Story = StoryObj<typeof meta>

const MARKDOWN_ANSWER = [
  'Here is how **the inbox** works:',
  '',
  '1. An input is admitted and stored at once.',
  '2. It waits for a safe boundary, then becomes a user message.',
  '',
  '```ts',
  "await view.admit('Also check the retry policy', { delivery: 'queue' })",
  '```',
  '',
  '| delivery | joins the running turn |',
  '| -------- | :--------------------: |',
  '| steer    | yes                    |',
  '| queue    | no                     |',
  '',
  'See [the design notes](https://example.com/design). Raw HTML such as <b onclick="x()">this</b> stays text.',
].join('\n')

/** A turn streams in live, word by word, from the seeded scripted model. */
export const Streaming: Story = {
  ...storySession({ model: { wordDelayMs: 40 } }),
  render: (_args, context) => (
    <Vanilla
      className="chat"
      style={{ height: '100vh' }}
      mount={(host) =>
        mountParts(host, sessionOf(context), {
          start: (view) =>
            void view.admit('Explain how steering differs from queueing', { delivery: 'steer' }),
        })
      }
    />
  ),
}

/** A finished answer rendered as markdown: lists, code, a table, a link; raw HTML stays text. */
export const MarkdownAnswer: Story = {
  ...storySession({
    prepare: ({ client, sessionId }) =>
      client
        .append(sessionId, answeredTurn(1, 'How does the inbox work?', MARKDOWN_ANSWER))
        .then(() => undefined),
  }),
  render: (_args, context) => (
    <Vanilla
      className="chat"
      style={{ height: '100vh' }}
      mount={(host) => mountParts(host, sessionOf(context))}
    />
  ),
}
