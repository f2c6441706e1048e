import { useEffect, useState } from 'react'
import type { SessionView } from '../../src/index'
import type { StorySession } from './story-session'

/** The story session's view, opened for as long as the component is mounted. */
export function useStoryView(session: StorySession): SessionView {
  const [view] = useState(() => session.client.open(session.sessionId))
  useEffect(() => () => view.dispose(), [view])
  return view
}
