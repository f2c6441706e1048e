/**
 * Bad input gives a typed error, or a documented partial result, and never hangs.
 *
 * Documented partial results: an unreadable line (malformed JSON, a truncated last line, a
 * line over MAX_LINE_CHARS) is skipped and counted in `skippedLines`, as Pi skips it; the rest
 * of the file imports.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, test } from 'vitest'
import { MAX_LINE_CHARS, parseTranscript, parseTranscriptBlob } from '../../src/import/index'
import { isSessionlineError, type SessionlineError } from '../../src/schema/errors'
import { ownFixtures, sharedTranscripts } from './fixture-paths'

function failure(run: () => unknown): SessionlineError {
  try {
    run()
  } catch (error) {
    if (isSessionlineError(error)) return error
    throw error
  }
  throw new Error('expected a SessionlineError')
}

async function asyncFailure(run: () => Promise<unknown>): Promise<SessionlineError> {
  try {
    await run()
  } catch (error) {
    if (isSessionlineError(error)) return error
    throw error
  }
  throw new Error('expected a SessionlineError')
}

const bad = (name: string) => readFileSync(path.join(ownFixtures, 'bad', name), 'utf8')

describe('Pi files that break the format', () => {
  test.each([
    ['pi-duplicate-ids.jsonl', 'invalid_input', /appears twice/],
    ['pi-cycle.jsonl', 'invalid_input', /its own ancestor/],
    ['pi-dangling-leaf.jsonl', 'invalid_input', /names no entry/],
    ['pi-v4.jsonl', 'unsupported_format', /v4/],
    ['pi-headerless.jsonl', 'unsupported_format', /Not a Pi, Claude Code or Codex/],
  ])('%s fails with %s', (name, code, message) => {
    const error = failure(() => parseTranscript(bad(name)))
    expect(error.code).toBe(code)
    expect(error.message).toMatch(message)
  })

  test('a header-less file read as Pi says the header is missing', () => {
    const error = failure(() => parseTranscript(bad('pi-headerless.jsonl'), { format: 'pi' }))
    expect(error.code).toBe('unsupported_format')
    expect(error.message).toMatch(/session header/)
  })
})

describe('files that are not session files', () => {
  const binary = new Uint8Array(4096).map((_, i) => (i * 7919) % 256)

  test('a binary file is refused, as text and as a Blob', async () => {
    const text = new TextDecoder().decode(binary)
    expect(failure(() => parseTranscript(text)).code).toBe('unsupported_format')
    expect((await asyncFailure(() => parseTranscriptBlob(new Blob([binary])))).code).toBe(
      'unsupported_format',
    )
  })

  test('an empty file and a JSON file of another kind are refused', () => {
    expect(failure(() => parseTranscript('')).message).toMatch(/no readable JSON lines/)
    expect(failure(() => parseTranscript('{"name":"package","version":"1.0.0"}')).code).toBe(
      'unsupported_format',
    )
  })
})

describe('partial results', () => {
  const sidechain = readFileSync(
    path.join(sharedTranscripts, 'claude/claude-code-log__sidechain_integrated.jsonl'),
    'utf8',
  )

  test('a truncated last line is skipped and counted; the rest imports', () => {
    const whole = parseTranscript(sidechain)
    const cut = sidechain.slice(0, sidechain.trimEnd().lastIndexOf('\n') + 200)
    const partial = parseTranscript(cut)
    expect(partial.skippedLines).toBe(1)
    expect(partial.records.filter((r) => r.type === 'message')).toHaveLength(
      whole.records.filter((r) => r.type === 'message').length - 1,
    )
  })

  test('the same text gives the same records as a string and as a streamed Blob', async () => {
    const text = readFileSync(path.join(ownFixtures, 'pi/tree-v2-retained-tail.jsonl'), 'utf8')
    expect(await parseTranscriptBlob(new Blob([text]))).toEqual(parseTranscript(text))
  })
})

describe('a 50 MB file of one line', () => {
  const SIZE = 50 * 1024 * 1024
  const oneLine = `{"type":"session","version":3,"id":"huge","cwd":"/","pad":"${'a'.repeat(SIZE)}"}`

  test('is over the line limit, skipped unread, and the file is refused', async () => {
    expect(oneLine.length).toBeGreaterThan(MAX_LINE_CHARS)
    const error = failure(() => parseTranscript(oneLine))
    expect(error.code).toBe('unsupported_format')
    expect(error.details).toEqual({ skippedLines: 1 })
    const streamed = await asyncFailure(() => parseTranscriptBlob(new Blob([oneLine])))
    expect(streamed.code).toBe('unsupported_format')
    expect(streamed.details).toEqual({ skippedLines: 1 })
  })

  test('inside an otherwise good file, only that line is lost', async () => {
    const good = readFileSync(path.join(ownFixtures, 'pi/null-leaf-v3.jsonl'), 'utf8').split('\n')
    const text = [good[0], good[1], `{"pad":"${'b'.repeat(SIZE)}"}`, ...good.slice(2)].join('\n')
    const fromText = parseTranscript(text)
    expect(fromText.skippedLines).toBe(1)
    expect(fromText.records.filter((r) => r.type === 'message')).toHaveLength(2)
    const fromBlob = await parseTranscriptBlob(new Blob([text]))
    expect(fromBlob.skippedLines).toBe(1)
    expect(fromBlob.records).toEqual(fromText.records)
  })
})
