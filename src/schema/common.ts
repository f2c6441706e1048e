import { z } from 'zod'

/** Ids are opaque, non-empty strings (input ids, message ids, session ids, tool call ids). */
export const Id = z.string().min(1).max(256)
/** A per-session sequence number; dense from 1. */
export const Seq = z.number().int().positive()
/** Milliseconds since the epoch. Authored time: describes, never orders. */
export const Timestamp = z.number().int().nonnegative()
export const TurnNumber = z.number().int().positive()
export const StepNumber = z.number().int().positive()
export const TokenCount = z.number().int().nonnegative()

/** Token counts of one model call (or their sum). `input` includes cached input. */
export const Usage = z.strictObject({ input: TokenCount, output: TokenCount })
export type Usage = z.infer<typeof Usage>

export const Delivery = z.enum(['steer', 'queue'])
export type Delivery = z.infer<typeof Delivery>

export const MessageSource = z.enum(['user', 'synthetic'])
export type MessageSource = z.infer<typeof MessageSource>

export const Visibility = z.enum(['visible', 'inactive', 'hidden'])
export type Visibility = z.infer<typeof Visibility>

/** Any structured-clone-safe JSON value (tool inputs and outputs). */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json }
export const Json: z.ZodType<Json> = z.lazy(() =>
  z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(Json), z.record(z.string(), Json)]),
)

/** Largest text of one admitted input, in UTF-16 code units (about 200 KB). */
export const MAX_INPUT_TEXT = 100_000
