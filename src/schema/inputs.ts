import { z } from 'zod'
import { AttachmentInputs, FilePart } from './attachments'
import { Delivery, Id, MAX_INPUT_TEXT, Seq, Timestamp } from './common'

export const InputStatus = z.enum(['pending', 'promoted', 'cancelled'])
export type InputStatus = z.infer<typeof InputStatus>

const InputText = z
  .string()
  .max(MAX_INPUT_TEXT, `text is longer than ${MAX_INPUT_TEXT} characters`)
  .refine((t) => t.trim().length > 0, 'text is empty')

/**
 * What a caller hands to `admit`. With attachments the text may be empty (a pasted screenshot
 * alone is an input); without, it may not.
 */
export const AdmitRequest = z
  .strictObject({
    id: Id.optional(),
    text: z.string().max(MAX_INPUT_TEXT, `text is longer than ${MAX_INPUT_TEXT} characters`),
    delivery: Delivery.default('steer'),
    attachments: AttachmentInputs.optional(),
  })
  .refine((r) => r.text.trim().length > 0 || (r.attachments?.length ?? 0) > 0, {
    message: 'text is empty',
    path: ['text'],
  })
export type AdmitRequest = z.input<typeof AdmitRequest>

export const EditRequest = z.strictObject({ text: InputText })
export type EditRequest = z.infer<typeof EditRequest>

/** A durable inbox receipt. `seq` is the admission seq, dense per session, separate from event seqs. */
export const InputReceipt = z.strictObject({
  id: Id,
  sessionId: Id,
  seq: Seq,
  delivery: Delivery,
  text: z.string(),
  status: InputStatus,
  admittedAt: Timestamp,
  updatedAt: Timestamp.optional(),
  /** The seq of the `user/message` event that promoted it. */
  promotedSeq: Seq.optional(),
  /**
   * Which version of the receipt this is: 0 when admitted, bumped by every change (edit,
   * cancel, promotion). Of two copies of one receipt, the higher revision is the newer one,
   * however their stamps compare.
   */
  revision: z.number().int().nonnegative(),
  /** The files admitted with the text (docs/decisions/0031); absent when there were none. */
  attachments: z.array(FilePart).optional(),
  /**
   * Where a reordered input stands in the inbox: pending inputs go by `rank ?? seq`, then `seq`
   * (docs/decisions/0033). Absent until `reorder` places it.
   */
  rank: z.number().finite().optional(),
})
export type InputReceipt = z.infer<typeof InputReceipt>
