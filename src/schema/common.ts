import { z } from 'zod'
import { MAX_ID_LENGTH, MAX_JSON_DEPTH, MAX_TOOL_PAYLOAD } from './limits'

export { MAX_INPUT_TEXT } from './limits'

/** Ids are opaque, non-empty strings (input ids, message ids, session ids, tool call ids). */
export const Id = z
  .string()
  .min(1, 'an id is empty')
  .max(MAX_ID_LENGTH, `an id is longer than ${MAX_ID_LENGTH} characters`)
/** A per-session sequence number; dense from 1. */
export const Seq = z.number().int().positive()
/** Milliseconds since the epoch. Authored time: describes, never orders. */
export const Timestamp = z.number().int().nonnegative()
export const TurnNumber = z.number().int().positive()
export const StepNumber = z.number().int().positive()
export const TokenCount = z.number().int().nonnegative()

/**
 * Token counts of one model call (or their sum). `input` includes cached input and `output`
 * includes reasoning; `cachedInput` and `reasoning` are there when the provider told them.
 */
export const Usage = z.strictObject({
  input: TokenCount,
  output: TokenCount,
  cachedInput: TokenCount.optional(),
  reasoning: TokenCount.optional(),
})
export type Usage = z.infer<typeof Usage>

export const Delivery = z.enum(['steer', 'queue'])
export type Delivery = z.infer<typeof Delivery>

export const MessageSource = z.enum(['user', 'synthetic'])
export type MessageSource = z.infer<typeof MessageSource>

export const Visibility = z.enum(['visible', 'inactive', 'hidden'])
export type Visibility = z.infer<typeof Visibility>

/** Any structured-clone-safe JSON value (tool inputs and outputs). */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json }

/** The result of `copyJson`: the copy and its size, or where and why the value is no JSON. */
export type CopiedJson =
  | { ok: true; value: Json; size: number }
  | { ok: false; path: (string | number)[]; message: string }

/** Thrown inside `copyJson`'s walk; a class of its own, so no value of the caller's is mistaken for it. */
class NotJson {
  constructor(
    readonly path: (string | number)[],
    readonly message: string,
  ) {}
}

const isPlainObject = (value: object): boolean => {
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/**
 * A fresh copy of a JSON value, or where it is not one. The copy is the engine's own (a caller
 * mutating its object later changes nothing stored), and every key is an own data property of
 * a plain object: a key `__proto__` stays a key (assigning it would replace the prototype) and
 * `constructor` is only a name. Only plain objects and arrays pass: a Date, a Map, a class
 * instance or a DOM node is no JSON, and neither are functions, symbols, bigints, `undefined`
 * and non-finite numbers. Depth and size are bounded, which also stops a cycle.
 */
export function copyJson(value: unknown, maxSize = MAX_TOOL_PAYLOAD): CopiedJson {
  let size = 0
  const grow = (by: number, path: (string | number)[]) => {
    size += by
    if (size > maxSize) throw new NotJson(path, `payload is larger than ${maxSize}`)
  }
  const walk = (v: unknown, depth: number, path: (string | number)[]): Json => {
    grow(1, path)
    if (v === null || typeof v === 'boolean') return v
    if (typeof v === 'string') {
      grow(v.length, path)
      return v
    }
    if (typeof v === 'number') {
      if (Number.isFinite(v)) return v
      throw new NotJson(path, `${v} is not a JSON number`)
    }
    if (typeof v !== 'object') throw new NotJson(path, `a ${typeof v} is not JSON`)
    if (depth >= MAX_JSON_DEPTH) throw new NotJson(path, `payload is nested deeper than ${MAX_JSON_DEPTH}`)
    if (Array.isArray(v)) {
      const out: Json[] = []
      for (let i = 0; i < v.length; i++) out.push(walk(v[i], depth + 1, [...path, i]))
      return out
    }
    if (!isPlainObject(v)) throw new NotJson(path, 'only plain objects and arrays are JSON')
    const out: { [key: string]: Json } = {}
    for (const key of Object.keys(v)) {
      grow(key.length, path)
      const item = walk((v as Record<string, unknown>)[key], depth + 1, [...path, key])
      Object.defineProperty(out, key, { value: item, writable: true, enumerable: true, configurable: true })
    }
    return out
  }
  try {
    const copy = walk(value, 0, [])
    return { ok: true, value: copy, size }
  } catch (error) {
    if (error instanceof NotJson) return { ok: false, path: error.path, message: error.message }
    // A getter that throws, or a proxy that refuses to be read.
    const reason = error instanceof Error ? error.message : String(error)
    return { ok: false, path: [], message: `unreadable value (${reason})` }
  }
}

/** A JSON value (tool inputs and outputs), validated and copied by `copyJson`. */
export const Json: z.ZodType<Json> = z.unknown().transform((value, ctx): Json => {
  const copied = copyJson(value)
  if (copied.ok) return copied.value
  ctx.addIssue({ code: 'custom', message: copied.message, path: copied.path })
  return z.NEVER
})
