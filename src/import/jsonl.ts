/**
 * JSON Lines reading shared by every adapter: text or a `Blob` in, parsed objects out, one per
 * line. A line that is not a JSON object is skipped and counted (Pi skips malformed lines the
 * same way), and so is a line longer than `MAX_LINE_CHARS`: a 50 MB single line costs one scan,
 * never an unbounded buffer or a parse that stalls the worker.
 *
 * @example
 *   const { lines, skipped } = parseJsonLines(text)
 *   const fromFile = await readJsonLines(file) // streams the Blob in chunks
 */
import { SessionlineError } from '../schema/errors'
import { SkipLog } from './skips'
import { isObject } from './util'

/** Longest line read, in UTF-16 code units; longer lines are skipped as unreadable. */
export const MAX_LINE_CHARS = 16 * 1024 * 1024

export type JsonObject = Record<string, unknown>

export interface JsonLine {
  /** 1-based line number in the file. */
  line: number
  value: JsonObject
}

export interface ParsedLines {
  lines: JsonLine[]
  /** Lines that were not empty and not a JSON object (or were too long). */
  skipped: number
  /** Every line left out, by reason: the reader's here, and the adapters add theirs. */
  skips: SkipLog
}

/** Collects lines one at a time; `parseJsonLines` and `readJsonLines` both feed it. */
class LineCollector {
  readonly lines: JsonLine[] = []
  readonly skips = new SkipLog()
  private lineNo = 0

  push(text: string): void {
    this.lineNo++
    if (text.length > MAX_LINE_CHARS) {
      this.skips.add(this.lineNo, 'line_too_long')
      return
    }
    this.pushParsed(text)
  }

  /** A line that was too long to keep: counted, never parsed. */
  pushOversized(): void {
    this.lineNo++
    this.skips.add(this.lineNo, 'line_too_long')
  }

  private pushParsed(text: string): void {
    const trimmed = text.trim()
    if (trimmed === '') return
    let value: unknown
    try {
      value = JSON.parse(trimmed)
    } catch {
      this.skips.add(this.lineNo, 'malformed_json')
      return
    }
    if (isObject(value)) this.lines.push({ line: this.lineNo, value })
    else this.skips.add(this.lineNo, 'not_an_object')
  }

  result(): ParsedLines {
    const skips = this.skips
    return {
      lines: this.lines,
      skips,
      get skipped() {
        return skips.count
      },
    }
  }
}

const BINARY_PROBE = 8192

function refuseBinary(sample: string): void {
  // A NUL character never appears in a JSON Lines file (JSON escapes it); it does in binaries.
  if (sample.includes('\u0000')) {
    throw new SessionlineError('unsupported_format', 'This is a binary file, not a JSON Lines session file')
  }
}

export function parseJsonLines(text: string): ParsedLines {
  refuseBinary(text.slice(0, BINARY_PROBE))
  const collector = new LineCollector()
  let start = 0
  while (start <= text.length) {
    let end = text.indexOf('\n', start)
    if (end === -1) end = text.length
    if (end > start) collector.push(text.slice(start, end))
    else if (end < text.length) collector.push('')
    start = end + 1
  }
  return collector.result()
}

/**
 * Reads a Blob in chunks (Blob.stream + TextDecoder), parsing each line as it completes: the
 * file is never held as one string. A line over `MAX_LINE_CHARS` is dropped as it streams.
 */
export async function readJsonLines(blob: Blob): Promise<ParsedLines> {
  const collector = new LineCollector()
  const decoder = new TextDecoder('utf-8')
  const reader = blob.stream().getReader()
  let pending = ''
  let oversized = false
  let probed = false
  try {
    for (;;) {
      const { done, value } = await reader.read()
      const chunk = done ? decoder.decode() : decoder.decode(value, { stream: true })
      if (!probed && chunk.length > 0) {
        refuseBinary(chunk.slice(0, BINARY_PROBE))
        probed = true
      }
      let start = 0
      for (;;) {
        const newline = chunk.indexOf('\n', start)
        if (newline === -1) break
        if (oversized) collector.pushOversized()
        else collector.push(pending + chunk.slice(start, newline))
        pending = ''
        oversized = false
        start = newline + 1
      }
      if (!oversized) {
        pending += chunk.slice(start)
        if (pending.length > MAX_LINE_CHARS) {
          pending = ''
          oversized = true
        }
      }
      if (done) break
    }
  } finally {
    reader.releaseLock()
  }
  if (oversized) collector.pushOversized()
  else if (pending !== '') collector.push(pending)
  return collector.result()
}
