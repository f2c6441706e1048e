/**
 * A generator of Pi session files (v2/v3 trees) written the way Pi appends them: each new
 * entry is a child of the current position. The script of operations covers what the context
 * algorithm has to get right: branches (with and without a branch summary, empty summaries
 * included), durable `leaf` lines (to an entry or `null`), both compaction forms
 * (`firstKeptEntryId`, sometimes naming nothing on the path, and `retainedTail`), tool call ids
 * reused across branches, hidden custom messages, user shell commands kept out of the context
 * (`excludeFromContext`), orphan roots and unreadable lines.
 *
 * The builder also works out, independently of the adapter, what the file's usage totals and
 * hidden messages must be.
 */
import fc from 'fast-check'

/** The one set of generated trees: the oracle test and the IndexedDB round trip both check all of them. */
export const PI_TREE_RUNS = { seed: 20_261_130, numRuns: 600 } as const

export type PiOp =
  | { kind: 'user'; blocks: boolean }
  | { kind: 'assistant'; calls: number[]; thinking: boolean; usage: [number, number, number, number] }
  | { kind: 'toolResult'; call: number; error: boolean }
  | { kind: 'custom'; display: boolean; asEntry: boolean }
  | { kind: 'bash'; excluded: boolean }
  | { kind: 'branch'; target: number; summary: 'none' | 'text' | 'empty'; usage: boolean }
  | { kind: 'leaf'; target: number | null }
  | { kind: 'compact'; form: 'legacy' | 'tail'; keep: number; bogus: boolean; usage: boolean }
  | { kind: 'orphan' }
  | { kind: 'meta'; label: boolean }
  | { kind: 'garbage' }

const usageArb = fc.tuple(fc.integer({ min: 1, max: 900 }), fc.nat(300), fc.nat(400), fc.nat(50))

export const piOpArb: fc.Arbitrary<PiOp> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('user' as const), blocks: fc.boolean() }) },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('assistant' as const),
      calls: fc.array(fc.nat(3), { maxLength: 2 }),
      thinking: fc.boolean(),
      usage: usageArb,
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('toolResult' as const), call: fc.nat(3), error: fc.boolean() }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('custom' as const),
      display: fc.boolean(),
      asEntry: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('bash' as const), excluded: fc.boolean() }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('branch' as const),
      target: fc.nat(),
      summary: fc.constantFrom('none' as const, 'text' as const, 'empty' as const),
      usage: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('leaf' as const), target: fc.option(fc.nat(), { freq: 4 }) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('compact' as const),
      form: fc.constantFrom('legacy' as const, 'tail' as const),
      keep: fc.nat(),
      bogus: fc.nat(5).map((n) => n === 0),
      usage: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('orphan' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('meta' as const), label: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('garbage' as const) }) },
)

export const piScriptArb = fc.record({
  version: fc.constantFrom(2 as const, 3 as const),
  ops: fc.array(piOpArb, { minLength: 1, maxLength: 40 }),
})

type Entry = Record<string, unknown> & { id: string; parentId: string | null; type: string }

export interface BuiltPiFile {
  text: string
  /** What the usage totals must be: every assistant entry and summary call, no tail copy. */
  usage: { input: number; output: number; calls: number }
  /** Keys of every display:false custom message, tail copies included. */
  hidden: Set<string>
  /** Keys of every `excludeFromContext` shell command, tail copies included. */
  excluded: Set<string>
  /** What the script exercised, to check the generator covers the cases. */
  features: Set<string>
}

const BASE = Date.parse('2026-01-01T00:00:00.000Z')

export function buildPiFile(script: { version: 2 | 3; ops: readonly PiOp[] }): BuiltPiFile {
  const { version, ops } = script
  const lines: string[] = [
    JSON.stringify({
      type: 'session',
      version,
      id: 'gen-session',
      timestamp: new Date(BASE).toISOString(),
      cwd: '/gen',
    }),
  ]
  const entries: Entry[] = []
  const byId = new Map<string, Entry>()
  const hidden = new Set<string>()
  const excluded = new Set<string>()
  const features = new Set<string>()
  /** The compaction forms written so far: a file with both checks that only the last one counts. */
  const compactions = new Set<string>()
  const usage = { input: 0, output: 0, calls: 0 }
  let leaf: string | null = null
  let counter = 0
  const nextId = () => ((++counter * 2654435761) >>> 0).toString(16).padStart(8, '0')
  const timestamp = () => new Date(BASE + counter * 1000).toISOString()
  const customRole = version >= 3 ? 'custom' : 'hookMessage'

  const append = (fields: Record<string, unknown>, parentId: string | null = leaf): Entry => {
    const id = nextId()
    const entry = { id, parentId, timestamp: timestamp(), ...fields } as unknown as Entry
    lines.push(JSON.stringify(entry))
    entries.push(entry)
    byId.set(id, entry)
    leaf = id
    return entry
  }
  const pathOf = (id: string | null): Entry[] => {
    const path: Entry[] = []
    let at = id === null ? undefined : byId.get(id)
    while (at) {
      path.unshift(at)
      at = at.parentId === null ? undefined : byId.get(at.parentId)
    }
    return path
  }
  const addUsage = (u: [number, number, number, number]) => {
    usage.input += u[0] + u[2] + u[3]
    usage.output += u[1]
    usage.calls++
  }
  const piUsage = (u: [number, number, number, number]) => ({
    input: u[0],
    output: u[1],
    cacheRead: u[2],
    cacheWrite: u[3],
    totalTokens: u[0] + u[1] + u[2] + u[3],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  })

  for (const op of ops) {
    switch (op.kind) {
      case 'user': {
        const text = `prompt ${counter + 1}`
        append({
          type: 'message',
          message: {
            role: 'user',
            content: op.blocks ? [{ type: 'text', text }] : text,
            timestamp: BASE + counter,
          },
        })
        break
      }
      case 'assistant': {
        const content: unknown[] = []
        if (op.thinking) content.push({ type: 'thinking', thinking: 'hmm' })
        content.push({ type: 'text', text: `answer ${counter + 1}` })
        for (const c of op.calls)
          content.push({ type: 'toolCall', id: `call_${c}`, name: 'read', arguments: { path: `f${c}` } })
        if (op.calls.length > 0) features.add('toolCall')
        append({
          type: 'message',
          message: {
            role: 'assistant',
            content,
            provider: 'gen',
            model: 'gen-1',
            usage: piUsage(op.usage),
            stopReason: op.calls.length > 0 ? 'toolUse' : 'stop',
            timestamp: BASE + counter,
          },
        })
        addUsage(op.usage)
        break
      }
      case 'toolResult':
        append({
          type: 'message',
          message: {
            role: 'toolResult',
            toolCallId: `call_${op.call}`,
            toolName: 'read',
            content: [{ type: 'text', text: `out ${counter + 1}` }],
            isError: op.error,
            timestamp: BASE + counter,
          },
        })
        break
      case 'custom': {
        const entry = op.asEntry
          ? append({
              type: 'custom_message',
              customType: 'gen-ext',
              content: 'injected',
              display: op.display,
            })
          : append({
              type: 'message',
              message: {
                role: customRole,
                customType: 'gen-ext',
                content: 'injected',
                display: op.display,
                timestamp: BASE + counter,
              },
            })
        if (!op.display) {
          hidden.add(entry.id)
          features.add('hiddenCustom')
        }
        break
      }
      case 'branch': {
        if (entries.length === 0) break
        const from = leaf
        const target = entries[op.target % entries.length]!
        leaf = target.id
        features.add('branch')
        if (op.summary !== 'none') {
          const u: [number, number, number, number] = [40, 20, 0, 0]
          append({
            type: 'branch_summary',
            fromId: from ?? 'root',
            summary: op.summary === 'text' ? 'left branch summary' : '',
            ...(op.usage ? { usage: piUsage(u) } : {}),
          })
          if (op.usage) addUsage(u)
          features.add(op.summary === 'text' ? 'branchSummary' : 'emptyBranchSummary')
        }
        break
      }
      case 'leaf': {
        const targetId =
          op.target === null || entries.length === 0 ? null : entries[op.target % entries.length]!.id
        lines.push(
          JSON.stringify({ type: 'leaf', id: nextId(), parentId: leaf, timestamp: timestamp(), targetId }),
        )
        leaf = targetId
        features.add(targetId === null ? 'nullLeaf' : 'durableLeaf')
        break
      }
      case 'compact': {
        const path = pathOf(leaf)
        if (path.length === 0) break
        const u: [number, number, number, number] = [100, 30, 0, 0]
        const summaryUsage = op.usage ? { usage: piUsage(u) } : {}
        if (op.form === 'legacy') {
          const firstKeptEntryId = op.bogus ? 'no-such-entry' : path[op.keep % path.length]!.id
          append({
            type: 'compaction',
            summary: 'compacted',
            firstKeptEntryId,
            tokensBefore: 1000,
            ...summaryUsage,
          })
          features.add('legacyCompaction')
        } else {
          const messages = path
            .filter((e) => e.type === 'message')
            .map((e) => e.message as Record<string, unknown>)
          const tail = structuredClone(messages.slice(messages.length - (op.keep % 4)))
          const compaction = append({
            type: 'compaction',
            summary: 'compacted with tail',
            ...(op.bogus ? { firstKeptEntryId: path[0]!.id } : {}),
            tokensBefore: 1000,
            retainedTail: tail,
            ...summaryUsage,
          })
          tail.forEach((m, i) => {
            if ((m.role === 'custom' || m.role === 'hookMessage') && m.display === false)
              hidden.add(`${compaction.id}#tail${i}`)
            if (m.role === 'bashExecution' && m.excludeFromContext === true)
              excluded.add(`${compaction.id}#tail${i}`)
          })
          features.add(tail.length > 0 ? 'tailCompaction' : 'emptyTailCompaction')
        }
        if (op.usage) addUsage(u)
        compactions.add(op.form)
        if (compactions.size === 2) features.add('mixedCompactions')
        break
      }
      case 'bash': {
        const entry = append({
          type: 'message',
          message: {
            role: 'bashExecution',
            command: 'ls',
            output: 'a.txt',
            exitCode: 0,
            cancelled: false,
            truncated: false,
            ...(op.excluded ? { excludeFromContext: true } : {}),
            timestamp: BASE + counter,
          },
        })
        if (op.excluded) {
          excluded.add(entry.id)
          features.add('excludedBash')
        }
        break
      }
      case 'orphan':
        append(
          { type: 'message', message: { role: 'user', content: 'orphan', timestamp: BASE + counter } },
          `gone-${counter}`,
        )
        features.add('orphan')
        break
      case 'meta':
        if (op.label && entries.length > 0) append({ type: 'label', targetId: entries[0]!.id, label: 'mark' })
        else append({ type: 'model_change', provider: 'gen', modelId: 'gen-2' })
        break
      case 'garbage':
        lines.push('{"type":"message","id":"trunc')
        features.add('garbage')
        break
    }
  }
  return { text: `${lines.join('\n')}\n`, usage, hidden, excluded, features }
}
