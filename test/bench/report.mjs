// @ts-check
/**
 * Turns a benchmark report into the markdown table the runner prints. Plain JavaScript so
 * `run.mjs` (started by `npm run bench`, no TypeScript loader) can import it.
 */

/** @typedef {{ reps: number, opsPerRep: number, median: number, perOp: number, min?: number, max?: number, all?: number[] }} Figure */
/**
 * @typedef {{ id: string, name: string, op: string, unit: 'ms' | 'MB' | 'KB' | 'snapshots', sessionline: Figure, raw: Figure,
 *   ratio: number | null, target?: number, note?: string }} Comparison
 */

/** @param {number} x */
const fixed = (x) => (Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2))
/** @param {number} x */
const perOp = (x) => (x >= 1 ? x.toFixed(2) : x >= 0.01 ? x.toFixed(3) : x.toPrecision(2))

/**
 * The spread of a figure's repetitions, as min–max around the median: a ratio whose sides
 * spread wider than the gap between them is not a finding. Figures recorded before the runner
 * kept min and max have none.
 * @param {Figure} f
 */
function spread(f) {
  if (f.min === undefined || f.max === undefined || f.reps < 2) return ''
  return ` [${fixed(f.min)}–${fixed(f.max)}]`
}

/** @param {Figure} f @param {Comparison['unit']} unit */
function cell(f, unit) {
  if (unit !== 'ms') return `${fixed(f.median)}${spread(f)} ${unit}`
  const each = f.opsPerRep > 1 ? ` (${perOp(f.perOp)} ms/op)` : ''
  return `${fixed(f.median)}${spread(f)} ms${each}`
}

/**
 * The spread of the ratio itself: the lowest and highest sessionline ÷ raw over the repetitions,
 * paired in order (repetition i of each side ran interleaved with the other, under the same load).
 * @param {Comparison} c
 * @returns {string}
 */
export function ratioSpread(c) {
  const a = c.sessionline.all
  const b = c.raw.all
  if (!a || !b || a.length !== b.length || a.length < 2) return ''
  const ratios = a
    .map((x, i) => (b[i] ? x / /** @type {number} */ (b[i]) : Number.NaN))
    .filter(Number.isFinite)
  if (ratios.length < 2) return ''
  return ` [${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}]`
}

/** @param {Comparison} c */
function verdict(c) {
  if (c.target === undefined) return '—'
  if (c.ratio === null) return `≤ ${c.target}× (n/a)`
  return `≤ ${c.target}× ${c.ratio <= c.target ? 'met' : 'MISSED'}`
}

/**
 * @param {Comparison[]} comparisons
 * @param {{ judge?: boolean }} [options] judge: false leaves targets unjudged (figures that mean nothing)
 * @returns {string}
 */
export function markdownTable(comparisons, { judge = true } = {}) {
  const lines = [
    '| # | benchmark | one op | sessionline median [min–max] | raw Dexie median [min–max] | ratio [per-rep min–max] | target |',
    '|---|---|---|---:|---:|---:|---|',
  ]
  for (const c of comparisons) {
    const ratio = c.ratio === null ? 'n/a' : `${c.ratio.toFixed(2)}×${ratioSpread(c)}`
    const reps = c.unit === 'ms' ? ` (${c.sessionline.opsPerRep}×${c.sessionline.reps})` : ''
    lines.push(
      `| ${c.id} | ${c.name}${reps} | ${c.op} | ${cell(c.sessionline, c.unit)} | ${cell(c.raw, c.unit)} | ${ratio} | ${judge ? verdict(c) : '—'} |`,
    )
  }
  return lines.join('\n')
}

/** @param {Comparison[]} comparisons */
export function missedTargets(comparisons) {
  return comparisons.filter((c) => c.target !== undefined && c.ratio !== null && c.ratio > c.target)
}

/** @typedef {{ id: string, name: string, turns: number, events: number, value: number, unit: 'events/s', atLeast: number }} FoldFigure */

/**
 * The fold figures (src/folds.ts): events per CPU-second, judged against their floor.
 * @param {FoldFigure[]} folds
 * @returns {string}
 */
export function foldTable(folds) {
  const lines = ['| # | fold | events folded | events/s | target |', '|---|---|---:|---:|---|']
  for (const f of folds) {
    const met = f.value >= f.atLeast ? 'met' : 'MISSED'
    lines.push(
      `| ${f.id} | ${f.name} | ${f.events.toLocaleString('en')} | ${(f.value / 1e6).toFixed(2)}M | ≥ ${(f.atLeast / 1e6).toFixed(1)}M ${met} |`,
    )
  }
  return lines.join('\n')
}

/**
 * @typedef {{ median: number, all: number[], eventsPerSecond: number }} SyncSide
 * @typedef {{ id: string, name: string, events: number, bytes: number, batch: number, posts: number,
 *   where: string, raw: SyncSide, sessionline: SyncSide | null, ratio: number | null, note: string }} SyncFigure
 */

/** The sync targets (issue 29): a ratio to the raw side, or none (informational). */
const SYNC_TARGETS = /** @type {Record<string, number>} */ ({ 'sync-push': 1.3 })

/**
 * The sync figures over their target.
 * @param {SyncFigure[]} figures
 * @returns {SyncFigure[]}
 */
export function missedSyncTargets(figures) {
  return figures.filter((f) => {
    const limit = SYNC_TARGETS[f.id]
    return limit !== undefined && f.ratio !== null && f.ratio > limit
  })
}

/**
 * The sync figures (src/sync-measure.ts): events per second through a local Durable Streams
 * server, sessionline's sync against plain fetch POSTs of the same messages, from the same place
 * (the bench worker in Chromium, or Node on fake-indexeddb: the `where` column).
 * @param {SyncFigure[]} figures
 * @param {{ judge?: boolean }} [options] judge: false leaves targets unjudged (fake-indexeddb)
 * @returns {string}
 */
export function syncTable(figures, { judge = true } = {}) {
  const lines = [
    '| # | sync | where | events (JSON) | POSTs (largest) | sessionline | raw fetch | ratio | target |',
    '|---|---|---|---:|---:|---:|---:|---:|---|',
  ]
  /** @param {SyncSide} s */
  const side = (s) => `${s.eventsPerSecond.toLocaleString('en')} events/s (${fixed(s.median)} ms)`
  for (const f of figures) {
    const mb = (f.bytes / 2 ** 20).toFixed(1)
    const limit = SYNC_TARGETS[f.id]
    const target =
      limit === undefined
        ? '— (informational)'
        : `≤ ${limit}×${judge && f.ratio !== null ? (f.ratio <= limit ? ' met' : ' MISSED') : ''}`
    lines.push(
      `| ${f.id} | ${f.name} | ${f.where ?? '—'} | ${f.events.toLocaleString('en')} (${mb} MB) | ${f.posts ?? '—'} (${f.batch}) | ${f.sessionline ? side(f.sessionline) : 'not measured'} | ${side(f.raw)} | ${f.ratio === null ? '—' : `${f.ratio.toFixed(2)}×`} | ${target} |`,
    )
  }
  const notes = [...new Set(figures.map((f) => f.note).filter(Boolean))]
  return [lines.join('\n'), ...notes.map((n) => `\n> ${n}`)].join('\n')
}

/**
 * The growth rows (src/growth.ts) pivoted into one line per metric and size: sessionline and raw
 * Dexie per op, each against itself at the smallest size, and sessionline ÷ raw at that size.
 * @param {Comparison[]} comparisons
 * @param {{ judge?: boolean }} [options] judge: false leaves targets unjudged
 * @returns {string} empty when the run has no growth rows
 */
export function growthTable(comparisons, { judge = true } = {}) {
  const byId = new Map(comparisons.map((c) => [c.id, c]))
  const rows = comparisons.filter((c) => /^growth-(?!raw-|vs-raw-)/.test(c.id))
  if (rows.length === 0) return ''
  /** @param {number | null | undefined} r */
  const times = (r) => (r === null || r === undefined ? 'n/a' : `${r.toFixed(2)}×`)
  const lines = [
    '| metric | turns | sessionline per op | ÷ smallest | raw Dexie per op | ÷ smallest | sessionline ÷ raw | target |',
    '|---|---:|---:|---:|---:|---:|---:|---|',
  ]
  for (const c of rows) {
    const match = /^growth-(.+)-(\d+)$/.exec(c.id)
    if (!match) continue
    const [, metric, turns] = match
    const raw = byId.get(`growth-raw-${metric}-${turns}`)
    const vsRaw = byId.get(`growth-vs-raw-${metric}-${turns}`)
    lines.push(
      `| ${metric} | ${Number(turns).toLocaleString('en')} | ${perOp(c.sessionline.perOp)} ms | ${times(c.ratio)} | ${raw ? `${perOp(raw.sessionline.perOp)} ms` : '—'} | ${times(raw?.ratio)} | ${times(vsRaw?.ratio)} | ${judge ? verdict(c) : '—'} |`,
    )
  }
  return lines.join('\n')
}

/**
 * Whether two runs of the same preset agree (issue 28: two quick runs on a quiet machine within
 * ±15%): each comparison's median ratio in the repeat against the first run's. Comparisons with
 * no ratio in either run, or present in one only, are left out; `off` lists those outside.
 * @param {Comparison[]} first
 * @param {Comparison[]} repeat
 * @param {number} [tolerance] the largest relative difference that still agrees (0.15)
 * @returns {{ table: string, off: string[], compared: number }}
 */
export function agreementTable(first, repeat, tolerance = 0.15) {
  const byId = new Map(repeat.map((c) => [c.id, c]))
  const rows = []
  /** @type {string[]} */
  const off = []
  for (const a of first) {
    const b = byId.get(a.id)
    if (!b || a.ratio === null || b.ratio === null || a.ratio <= 0) continue
    const change = b.ratio / a.ratio - 1
    const agrees = Math.abs(change) <= tolerance
    if (!agrees) off.push(a.id)
    const sign = change >= 0 ? '+' : '−'
    rows.push(
      `| ${a.id} | ${a.ratio.toFixed(2)}×${ratioSpread(a)} | ${b.ratio.toFixed(2)}×${ratioSpread(b)} | ${sign}${Math.abs(change * 100).toFixed(0)}% | ${agrees ? 'yes' : 'NO'} |`,
    )
  }
  const table = [
    `| # | first run | repeat | change | within ±${Math.round(tolerance * 100)}% |`,
    '|---|---:|---:|---:|---|',
    ...rows,
  ].join('\n')
  return { table, off, compared: rows.length }
}
