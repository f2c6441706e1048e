/**
 * The playground's view of a session's history tree (docs/decisions/0033). Rows carry only their
 * place among their siblings (`branch: {index, count}`), not who the siblings are: the arrows of
 * a "2 / 3" picker ask the engine (`branches`, native and imported trees alike), and a summary's
 * "what it replaced" replays the session's log into the same pure tree the engine keeps. Read on
 * demand (a click), never per render.
 */
import { type HistoryTree, nodeOf, pathOf, replayTree } from '../../src/core/history-tree'
import type { SessionlineClient, SessionMessage, StoredEvent } from '../../src/index'

/** The engine reads this needs (a client, or an engine in tests). */
export type TreeSource = Pick<SessionlineClient, 'events' | 'page'>

const EVENTS_PAGE = 10_000

/** Replays every event of the session into its history tree. */
export async function readTree(source: TreeSource, sessionId: string): Promise<HistoryTree> {
  const events: StoredEvent[] = []
  let afterSeq = 0
  for (;;) {
    const batch = await source.events(sessionId, { afterSeq, limit: EVENTS_PAGE })
    events.push(...batch)
    if (batch.length < EVENTS_PAGE) break
    afterSeq = batch[batch.length - 1]!.seq
  }
  return replayTree(events)
}

/**
 * The sibling `step` places from row `messageId` (-1: the one before, 1: the one after), in
 * creation order, or `undefined` at either end.
 */
export async function siblingOf(
  source: Pick<SessionlineClient, 'branches'>,
  sessionId: string,
  messageId: string,
  step: -1 | 1,
): Promise<string | undefined> {
  // The engine names them: an imported tree has no log to replay.
  const siblings = (await source.branches(sessionId, messageId)).ids
  const at = siblings.indexOf(messageId)
  return at < 0 ? undefined : siblings[at + step]
}

/** Most rows a summary's expansion reads (one page). */
const REPLACED_LIMIT = 1000

/**
 * The rows summary `summaryId` replaced: the path from the root through the row it names, oldest
 * first (up to one page of them). Empty for a summary that replaced nothing (a fork's).
 */
export async function replacedBy(
  source: TreeSource,
  sessionId: string,
  summaryId: string,
): Promise<SessionMessage[]> {
  const tree = await readTree(source, sessionId)
  const summary = nodeOf(tree, summaryId)
  if (!summary?.through) return []
  const ids = new Set(pathOf(tree, summary.through))
  // Every row it replaced was written (and finished: no turn was open) before the summary.
  const page = await source.page(sessionId, {
    beforeSeq: summary.seq,
    includeInactive: true,
    limit: REPLACED_LIMIT,
  })
  return page.messages.filter((row) => ids.has(row.id))
}
