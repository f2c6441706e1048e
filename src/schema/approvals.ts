import { z } from 'zod'
import { Id } from './common'
import { ApprovalScope, MAX_APPROVAL_REASON } from './events'
import { MAX_TOOL_NAME } from './limits'

/**
 * A person's answer to a tool call that waits for approval (`respondToApproval`). `remember`:
 * `call` answers this call only; `session` approves the tool for the rest of the session;
 * `always` for every session (stored, revocable with `revokeToolApproval`). Only an approval is
 * remembered: a denial answers its call.
 */
export const ApprovalAnswer = z.strictObject({
  approved: z.boolean(),
  reason: z.string().max(MAX_APPROVAL_REASON).optional(),
  remember: ApprovalScope.default('call'),
})
export type ApprovalAnswer = z.input<typeof ApprovalAnswer>

const ToolName = z.string().min(1).max(MAX_TOOL_NAME)

/** Tools approved without asking: always, and for the session asked about. */
export const ToolApprovals = z.strictObject({ always: z.array(ToolName), session: z.array(ToolName) })
export type ToolApprovals = z.infer<typeof ToolApprovals>

/** Takes back a remembered approval: of one session, or the `always` one when `sessionId` is absent. */
export const RevokeToolApproval = z.strictObject({ tool: ToolName, sessionId: Id.optional() })
export type RevokeToolApproval = z.input<typeof RevokeToolApproval>

/** How remembered approvals are stored (one row; see store/approvals). */
export const StoredApprovals = z.strictObject({
  always: z.array(z.string()),
  /** [sessionId, tool names] pairs (no record: a session id is any string, `__proto__` too). */
  sessions: z.array(z.tuple([z.string(), z.array(z.string())])),
})
export type StoredApprovals = z.infer<typeof StoredApprovals>
