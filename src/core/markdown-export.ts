/**
 * A session's visible path as Markdown (`exportSession(id, {format: 'markdown'})`): a title,
 * then each visible row under a heading naming its role, text as it was written, tool calls with
 * their input and output in fenced blocks, and files by name (images as image links to their
 * file name, so a folder holding the files beside the document shows them). Reasoning and
 * pending inputs are not part of the conversation and are left out.
 *
 * @example
 *   renderMarkdown({ title: 'Trip' }, rows) // '# Trip\n\n## User\n\nwhere to?\n…'
 */
import type { Json } from '../schema/common'
import type { SessionMessage } from '../schema/messages'

const ROLE_TITLES: Record<SessionMessage['role'], string> = {
  user: 'User',
  assistant: 'Assistant',
  system: 'System',
  summary: 'Summary',
}

/** A fence longer than any run of backticks inside `text`. */
function fenced(text: string, info = ''): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length))
  const fence = '`'.repeat(longest + 1)
  return `${fence}${info}\n${text}\n${fence}`
}

const jsonText = (value: Json | undefined): string =>
  typeof value === 'string' ? value : JSON.stringify(value ?? null, null, 2)

/** Escapes what would make a file name end its link early. */
const linkText = (name: string) => name.replace(/[[\]\\]/g, (c) => `\\${c}`)
const linkTarget = (name: string) =>
  encodeURI(name).replace(/[()]/g, (c) => `%${c.charCodeAt(0).toString(16)}`)

/** The Markdown of `rows` (visible ones only, in the order given) under the session's title. */
export function renderMarkdown(session: { title: string }, rows: readonly SessionMessage[]): string {
  const blocks: string[] = [`# ${session.title.trim() || 'Untitled session'}`]
  let lastRole: string | undefined
  for (const row of rows) {
    if (row.visibility !== 'visible') continue
    const body: string[] = []
    for (const part of row.parts) {
      if (part.type === 'text') {
        if (part.text.trim() !== '') body.push(part.text)
      } else if (part.type === 'file') {
        const name = linkText(part.name)
        body.push(
          part.mediaType.startsWith('image/')
            ? `![${name}](${linkTarget(part.name)})`
            : `[${name}](${linkTarget(part.name)})`,
        )
      } else if (part.type === 'tool') {
        body.push(
          `**Tool \`${part.name}\`**${part.isError ? ' (failed)' : ''}`,
          fenced(jsonText(part.input), 'json'),
        )
        if (part.output !== undefined) body.push(fenced(jsonText(part.output)))
      }
    }
    if (body.length === 0) continue
    const role = ROLE_TITLES[row.role]
    // Consecutive rows of the assistant (one per model step) read as one answer.
    if (role !== lastRole) blocks.push(`## ${role}`)
    lastRole = role
    blocks.push(...body)
  }
  return `${blocks.join('\n\n')}\n`
}
