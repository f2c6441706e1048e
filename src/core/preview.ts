/**
 * Preview clamps for the turn outline and the page. Both sides call these same functions, so a
 * turn shows the same words whether the page has its events loaded or only the outline.
 *
 * A preview depends only on the first `PREVIEW_LIMITS.scanChars` characters of a text (and on
 * whether there are more): a 500,000-character block costs no more than a short one, and the
 * outline can keep a bounded prefix of a streaming answer instead of the whole text.
 *
 * @example
 *   clampPrompt('  Fix the\n  failing   test  ') // 'Fix the failing test'
 *   clampResponse('a\n\n\nb\nc\nd')            // 'a\nb\nc…'
 */

export const PREVIEW_LIMITS = {
  /** A prompt preview is one line of at most this many characters, ellipsis included. */
  promptChars: 50,
  /** A response preview has at most this many characters (newlines and ellipsis included)… */
  responseChars: 120,
  /** …on at most this many lines. */
  responseLines: 3,
  /** Only this many leading characters are ever looked at; a longer text counts as clipped. */
  scanChars: 4096,
} as const

export const ELLIPSIS = '…'

const WHITESPACE_RUN = /\s+/g
const LINE_BREAK = /\r\n?|\n|\u2028|\u2029/

/** Collapses every run of whitespace (newlines included) to one space and trims both ends. */
export function collapseWhitespace(text: string): string {
  return text.replace(WHITESPACE_RUN, ' ').trim()
}

/** The first `PREVIEW_LIMITS.scanChars` characters, and whether the text goes on past them. */
function scanWindow(text: string): { window: string; clipped: boolean } {
  const limit = PREVIEW_LIMITS.scanChars
  return text.length > limit
    ? { window: text.slice(0, limit), clipped: true }
    : { window: text, clipped: false }
}

/** Cuts `text` to at most `length` code units without splitting a surrogate pair. */
function cutAt(text: string, length: number): string {
  if (text.length <= length) return text
  const last = text.charCodeAt(length - 1)
  const end = last >= 0xd800 && last <= 0xdbff ? length - 1 : length
  return text.slice(0, end)
}

/** Ends `text` with an ellipsis, keeping the whole within `budget` characters. */
function withEllipsis(text: string, budget: number): string {
  return cutAt(text, budget - ELLIPSIS.length).trimEnd() + ELLIPSIS
}

/** One line of at most 50 characters; an ellipsis (inside the budget) marks a clip. */
export function clampPrompt(text: string): string {
  const { window, clipped } = scanWindow(text)
  const budget = PREVIEW_LIMITS.promptChars
  const line = collapsedAtLeast(window, budget + 1)
  return clipped || line.length > budget ? withEllipsis(line, budget) : line
}

/**
 * At most 3 lines and 120 characters: whitespace collapses within each line and blank lines are
 * dropped; an ellipsis (inside the budget) marks a clip.
 */
export function clampResponse(text: string): string {
  const { window, clipped } = scanWindow(text)
  const budget = PREVIEW_LIMITS.responseChars
  const lines: string[] = []
  /** The length of `lines` joined. */
  let used = 0
  let more = false
  for (const raw of window.split(LINE_BREAK)) {
    const separator = lines.length > 0 ? 1 : 0
    // At least one character even when the lines so far fill the budget exactly: whether this
    // line is blank decides whether the preview is clipped.
    const line = collapsedAtLeast(raw, Math.max(1, budget + 1 - used - separator))
    if (line === '') continue
    if (lines.length === PREVIEW_LIMITS.responseLines) {
      more = true
      break
    }
    lines.push(line)
    used += separator + line.length
    // Past the budget the preview is clipped, and clipped text depends only on its first
    // characters: no later line can change it.
    if (used > budget) break
  }
  const joined = lines.join('\n')
  return clipped || more || joined.length > budget ? withEllipsis(joined, budget) : joined
}

/**
 * `collapseWhitespace(line)`, or a prefix of it at least `atLeast` long. Collapsing a prefix of a
 * line gives a prefix of the line's collapse, so a preview that needs 121 characters of a
 * 4,096-character line collapses a few hundred of them, not all (42 µs a response otherwise).
 */
function collapsedAtLeast(line: string, atLeast: number): string {
  for (let cut = Math.max(64, 2 * atLeast); cut < line.length; cut *= 2) {
    const collapsed = collapseWhitespace(line.slice(0, cut))
    if (collapsed.length >= atLeast) return collapsed
  }
  return collapseWhitespace(line)
}
