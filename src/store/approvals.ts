/**
 * The tool approvals a person asked to remember (docs/decisions/0029): tools approved for one
 * session, and tools approved always. One row under the `projections` key no session can have
 * (session ids are non-empty), so no table or schema version is added for a handful of names.
 */
import { StoredApprovals } from '../schema/approvals'
import type { SessionlineDb } from './db'

const KEY: [string, string] = ['', 'tool-approvals']

const empty = (): StoredApprovals => ({ always: [], sessions: [] })

async function read(db: SessionlineDb): Promise<StoredApprovals> {
  const row = await db.projections.get(KEY)
  const parsed = StoredApprovals.safeParse(row?.state)
  // A row this code cannot read asks again for everything: approvals fail closed.
  return parsed.success ? parsed.data : empty()
}

/** Tools approved always, and those approved for `sessionId`. */
export async function rememberedApprovals(
  db: SessionlineDb,
  sessionId: string,
): Promise<{ always: string[]; session: string[] }> {
  const policies = await read(db)
  return {
    always: policies.always,
    session: policies.sessions.find(([id]) => id === sessionId)?.[1] ?? [],
  }
}

/** Adds (`remember`) or removes (`forget`) `tool` for `sessionId`, or for every session when undefined. */
export function changeApprovals(
  db: SessionlineDb,
  change: 'remember' | 'forget',
  tool: string,
  sessionId: string | undefined,
): Promise<void> {
  return db.transaction('rw', db.projections, async () => {
    const policies = await read(db)
    const edit = (tools: string[]) =>
      change === 'remember' ? [...new Set([...tools, tool])] : tools.filter((name) => name !== tool)
    if (sessionId === undefined) policies.always = edit(policies.always)
    else {
      const others = policies.sessions.filter(([id]) => id !== sessionId)
      const tools = edit(policies.sessions.find(([id]) => id === sessionId)?.[1] ?? [])
      policies.sessions = tools.length > 0 ? [...others, [sessionId, tools]] : others
    }
    await db.projections.put({ sessionId: KEY[0], name: KEY[1], version: 1, throughSeq: 0, state: policies })
  })
}
