import { z } from 'zod'

/** Every failure that crosses a public boundary carries one of these codes. */
export const ErrorCode = z.enum([
  'invalid_input',
  'not_found',
  'conflict',
  'invalid_state',
  'quota_exceeded',
  'storage_unavailable',
  'unsupported_format',
  /** An adapter's helper that sessionline cannot honour (the message names the limit). */
  'unsupported',
  'aborted',
  'timeout',
  'worker_gone',
  'provider_error',
  'internal',
])
export type ErrorCode = z.infer<typeof ErrorCode>

/**
 * Why an engine lost its database for good (`details.reason` of its `storage_unavailable`):
 * a newer version of the app upgraded it in another tab, or it was deleted (site data cleared).
 */
export const StorageLoss = z.enum(['upgraded', 'database_deleted'])
export type StorageLoss = z.infer<typeof StorageLoss>

/** The plain shape of an error on the wire (structured-clone safe). */
export const SerializedError = z.strictObject({
  code: ErrorCode,
  message: z.string(),
  details: z.unknown().optional(),
})
export type SerializedError = z.infer<typeof SerializedError>

/**
 * The one error class of sessionline. Compare by `code`; use `isSessionlineError` rather than
 * `instanceof` when the error may come from another realm (a worker, an iframe).
 */
export class SessionlineError extends Error {
  readonly code: ErrorCode
  readonly details: unknown

  constructor(code: ErrorCode, message: string, details?: unknown, options?: ErrorOptions) {
    super(message, options)
    this.name = 'SessionlineError'
    this.code = code
    this.details = details
  }

  toJSON(): SerializedError {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details }
  }

  static fromJSON(value: SerializedError): SessionlineError {
    return new SessionlineError(value.code, value.message, value.details)
  }
}

export const isSessionlineError = (error: unknown): error is SessionlineError =>
  error instanceof Error &&
  error.name === 'SessionlineError' &&
  ErrorCode.safeParse((error as { code?: unknown }).code).success

/** One issue of a failed validation, with the path spelled as `data.turn` or `events[2].type`. */
export interface ValidationIssue {
  path: string
  message: string
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = ''
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`
    else out += out === '' ? String(key) : `.${String(key)}`
  }
  return out
}

/** Turns a zod failure into an `invalid_input` error whose message names the offending field. */
export function invalidInput(
  what: string,
  error: z.ZodError,
  prefix: readonly PropertyKey[] = [],
): SessionlineError {
  const issues: ValidationIssue[] = error.issues.map((issue) => {
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : []
    const path = formatPath([...prefix, ...issue.path])
    const where = keys.length > 0 ? keys.map((k) => (path ? `${path}.${k}` : k)).join(', ') : path || '(root)'
    return { path: where, message: issue.message }
  })
  const first = issues[0]
  const summary = first ? `${first.path}: ${first.message}` : 'invalid value'
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : ''
  return new SessionlineError('invalid_input', `Invalid ${what}: ${summary}${more}`, { issues })
}

/** Parses `value` with `schema` or throws `invalid_input` naming the field. */
export function parseOrThrow<S extends z.ZodType>(
  schema: S,
  value: unknown,
  what: string,
  prefix: readonly PropertyKey[] = [],
): z.infer<S> {
  const result = schema.safeParse(value)
  if (!result.success) throw invalidInput(what, result.error, prefix)
  return result.data
}
