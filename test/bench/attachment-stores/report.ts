/** The attachment-stores run as markdown: what each browser supports, and per browser the two stores side by side. */
import { median } from '../src/stats'
import type { Features } from './features'
import type { OpfsWriter } from './stores'
import type { MeasureResult, SideTimes } from './worker'

export interface BrowserRun {
  browser: string
  features?: Features & { pageHasGetDirectory?: boolean; sharedWorker?: Features | string }
  runs: (MeasureResult & { label: string })[]
  /** The one-minute load average when the browser started and when it was done. */
  load: { start: number; end: number }
  seconds: number
  error?: string
}

type Metric = keyof Omit<SideTimes, 'errors'>
const STEPS: { key: Metric; name: string }[] = [
  { key: 'write', name: 'write (bytes + record)' },
  { key: 'file', name: 'of which the file' },
  { key: 'flush', name: 'of which flush()' },
  { key: 'readBlob', name: 'read to a Blob' },
  { key: 'readBytes', name: 'read the bytes' },
  { key: 'delete', name: 'delete' },
]

const numbers = (xs: (number | null)[]) => xs.filter((x): x is number => x !== null)
const ms = (x: number) => (x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0))

/** `median [min–max]` of what succeeded, or a dash. */
export function spread(xs: (number | null)[], format = ms): string {
  const ok = numbers(xs)
  if (ok.length === 0) return '—'
  return `${format(median(ok))} [${format(Math.min(...ok))}–${format(Math.max(...ok))}]`
}

/** OPFS over IndexedDB: the ratio of the medians, and the spread of the repetitions' own ratios. */
export function ratio(opfs: (number | null)[], idb: (number | null)[]): string {
  const a = numbers(opfs)
  const b = numbers(idb)
  if (a.length === 0 || b.length === 0 || median(b) === 0) return '—'
  const pairs = opfs.flatMap((x, i) => (x !== null && idb[i] ? [x / idb[i]!] : []))
  const r = (x: number) => x.toFixed(2)
  return `${r(median(a) / median(b))}× [${r(Math.min(...pairs))}–${r(Math.max(...pairs))}]`
}

const version = (ua: string | undefined) =>
  ua?.match(/(Chrome|Firefox)\/[\d.]+/)?.[0] ?? ua?.match(/AppleWebKit\/[\d.]+/)?.[0] ?? '?'

export function featuresTable(browsers: BrowserRun[]): string {
  const lines = [
    '| browser | getDirectory() | sync access handle | createWritable | Blob in IndexedDB | on the page: getDirectory | in a SharedWorker: getDirectory, sync handle, createWritable | cross-origin isolated, timer step |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
  ]
  for (const b of browsers) {
    const f = b.features
    if (!f) {
      lines.push(`| ${b.browser} | ${b.error ?? 'not run'} | | | | | | |`)
      continue
    }
    const s = f.sharedWorker
    const shared =
      s === undefined
        ? '?'
        : typeof s === 'string'
          ? s
          : `${s.getDirectory}, ${s.syncAccessHandle}, ${s.createWritable}`
    lines.push(
      `| ${b.browser} (${version(f.userAgent)}) | ${f.getDirectory} | ${f.syncAccessHandle} | ${f.createWritable} | ${f.indexedDbBlob} | ${f.pageHasGetDirectory ? 'present' : 'absent'} | ${shared} | ${f.crossOriginIsolated ? 'yes' : 'no'}, ${f.timerStepMs} ms |`,
    )
  }
  lines.push('', 'The first four columns are probed in the dedicated worker the measurements run in.')
  return lines.join('\n')
}

const SIDE_NAMES: Record<OpfsWriter, string> = {
  'sync-access-handle': 'OPFS sync handle',
  writable: 'OPFS createWritable',
}

export function browserTable(b: BrowserRun): string {
  const writers = (['sync-access-handle', 'writable'] as const).filter((w) => b.runs.some((r) => r.sides[w]))
  const head = `**${b.browser}** (${version(b.features?.userAgent)}; load ${b.load.start.toFixed(1)} → ${b.load.end.toFixed(1)}; ${b.seconds.toFixed(0)} s)`
  const columns = writers.flatMap((w) => [`${SIDE_NAMES[w]} + record, ms`, `${SIDE_NAMES[w]} / IndexedDB`])
  const header = ['size (reps)', 'step', 'IndexedDB Blob, ms', ...columns]
  const lines = [head, '', `| ${header.join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`]
  for (const run of b.runs) {
    const idb = run.sides.indexeddb
    for (const [i, step] of STEPS.entries()) {
      const part = step.key === 'flush' || step.key === 'file'
      if (part && !writers.some((w) => run.sides[w]?.[step.key].some((x) => x !== null))) continue
      const size = i === 0 ? `${run.label} (${run.reps})` : ''
      const cells = [part || !idb ? '' : spread(idb[step.key])]
      for (const w of writers) {
        const side = run.sides[w]
        cells.push(side ? spread(side[step.key]) : 'not run')
        cells.push(side && idb && !part ? ratio(side[step.key], idb[step.key]) : '')
      }
      lines.push(`| ${size} | ${step.name} | ${cells.join(' | ')} |`)
    }
  }
  const errors = b.runs.flatMap((run) =>
    Object.entries(run.sides).flatMap(([side, t]) =>
      (t?.errors ?? []).map((e) => `${run.label} ${side}: ${e}`),
    ),
  )
  if (b.error) errors.push(b.error)
  if (errors.length > 0) lines.push('', 'Errors:', ...errors.map((e) => `- ${e}`))
  return lines.join('\n')
}
