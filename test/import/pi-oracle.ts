/**
 * A reference of Pi's context algorithm, kept small enough to check by eye against Pi's
 * session-format documentation and `buildSessionContext` (MIT). It shares no code with the
 * adapter; the differential test runs both over generated files.
 *
 * 1. Lines are JSON objects; unreadable lines are dropped. Line 1 is the header.
 * 2. v1 files (no version) get ids `v1-<n>` and each entry's parent is the entry before; a
 *    v1 compaction's `firstKeptEntryIndex` counts the header as entry 0. Before v3 the
 *    `custom` role was spelled `hookMessage`.
 * 3. The leaf is the id of the last line, or the `targetId` of a last `leaf` line.
 * 4. The path runs from the leaf up through `parentId` until a parent is missing.
 * 5. With no compaction on the path, every path entry is sent. Otherwise the last compaction
 *    is sent first (its summary, then its `retainedTail` messages if it has them); then, if it
 *    has no `retainedTail`, the path entries from `firstKeptEntryId` up to it; then the path
 *    entries after it.
 * 6. A sent entry is a message if it is a `message`, a `custom_message`, a `branch_summary`
 *    with a summary, or that last compaction.
 * 7. Of those, a custom message with `display: false` is never shown (but given to the model),
 *    and a `bashExecution` with `excludeFromContext` is shown but never given to the model
 *    (Pi's `convertToLlm` drops it).
 */
type Entry = Record<string, unknown>

export interface OracleMessage {
  /** Entry id, or `<compaction id>#tail<i>` for the i-th retained-tail message. */
  key: string
  /** A custom message with `display: false`: sent to the model, never shown. */
  hidden: boolean
  /** A shell command run with `excludeFromContext`: shown, never sent to the model. */
  excluded: boolean
}

function readLines(text: string): Entry[] {
  const out: Entry[] = []
  for (const line of text.split('\n')) {
    try {
      const value = JSON.parse(line)
      if (value && typeof value === 'object' && !Array.isArray(value)) out.push(value)
    } catch {
      // dropped, as Pi drops it
    }
  }
  return out
}

export function piContext(text: string): OracleMessage[] {
  const all = readLines(text)
  const header = all[0]!
  const version = (header.version as number | undefined) ?? 1
  const entries = all.slice(1).filter((e) => e.type !== 'session')

  if (version === 1) {
    entries.forEach((e, i) => {
      e.id = `v1-${i + 1}`
      e.parentId = i === 0 ? null : `v1-${i}`
    })
    for (const e of entries) {
      if (e.type === 'compaction' && typeof e.firstKeptEntryIndex === 'number') {
        e.firstKeptEntryId = all[e.firstKeptEntryIndex]?.id
      }
    }
  }

  const isExcluded = (m: Entry) => m.role === 'bashExecution' && m.excludeFromContext === true
  const isCustom = (role: unknown) => role === 'custom' || (version < 3 && role === 'hookMessage')

  let leaf: string | null = null
  const byId = new Map<string, Entry>()
  for (const e of entries) {
    if (e.type === 'leaf') {
      leaf = e.targetId as string | null
    } else {
      leaf = e.id as string
      byId.set(e.id as string, e)
    }
  }

  const path: Entry[] = []
  let at = leaf === null ? undefined : byId.get(leaf)
  while (at) {
    path.unshift(at)
    at = typeof at.parentId === 'string' ? byId.get(at.parentId) : undefined
  }

  let last = -1
  path.forEach((e, i) => {
    if (e.type === 'compaction') last = i
  })

  const sent: Entry[] = []
  if (last === -1) {
    sent.push(...path)
  } else {
    const compaction = path[last]!
    sent.push(compaction)
    if (!Array.isArray(compaction.retainedTail)) {
      let keeping = false
      for (let i = 0; i < last; i++) {
        if (path[i]!.id === compaction.firstKeptEntryId) keeping = true
        if (keeping) sent.push(path[i]!)
      }
    }
    sent.push(...path.slice(last + 1))
  }

  const context: OracleMessage[] = []
  for (const e of sent) {
    const id = e.id as string
    if (e.type === 'compaction') {
      if (e !== path[last]) continue // only the last compaction speaks
      context.push({ key: id, hidden: false, excluded: false })
      const tail = Array.isArray(e.retainedTail) ? (e.retainedTail as Entry[]) : []
      tail.forEach((m, i) => {
        context.push({
          key: `${id}#tail${i}`,
          hidden: isCustom(m.role) && m.display === false,
          excluded: isExcluded(m),
        })
      })
    } else if (e.type === 'message') {
      const m = e.message as Entry
      context.push({ key: id, hidden: isCustom(m.role) && m.display === false, excluded: isExcluded(m) })
    } else if (e.type === 'custom_message') {
      context.push({ key: id, hidden: e.display === false, excluded: false })
    } else if (e.type === 'branch_summary' && e.summary) {
      context.push({ key: id, hidden: false, excluded: false })
    }
  }
  return context
}
