/**
 * The engine's methods that run a command of core/decide: each parses its arguments, runs the
 * command's recipe (./commands) and does what follows the write (a new input wakes the runner,
 * an approval remembered). The engine guards them (closed, not yet open, error shape).
 *
 * @example
 *   const writes = createWriteMethods({ db, cache, commands, attachmentLimits, notifyInput })
 *   const engine = { admit: guard('admit', writes.admit), … }
 */
import { nanoid } from 'nanoid'
import { ApprovalAnswer } from '../schema/approvals'
import type { AttachmentLimits } from '../schema/attachments'
import { Id } from '../schema/common'
import { parseOrThrow, SessionlineError } from '../schema/errors'
import { AppendEvents } from '../schema/events'
import { ReorderRequest, SetDeliveryRequest } from '../schema/history'
import { AdmitRequest, EditRequest } from '../schema/inputs'
import { PromoteMode } from '../schema/requests'
import { changeApprovals } from '../store/approvals'
import type { SessionlineDb } from '../store/db'
import { prepareAttachments } from './attachments'
import type { CommandTable } from './commands'
import type { SessionCache } from './session-cache'
import type { Engine } from './types'

export interface WriteMethodsDeps {
  db: SessionlineDb
  cache: Pick<SessionCache, 'use' | 'loadCurrent'>
  commands: CommandTable
  attachmentLimits: AttachmentLimits
  /** Tells the runner (and any host) that a session has new input to take. */
  notifyInput(sessionId: string): void
}

type WriteMethod =
  | 'admit'
  | 'cancel'
  | 'edit'
  | 'reorder'
  | 'setDelivery'
  | 'promote'
  | 'append'
  | 'respondToApproval'

const sessionIdOf = (value: unknown) => parseOrThrow(Id, value, 'session id')

export function createWriteMethods({
  db,
  cache,
  commands,
  attachmentLimits,
  notifyInput,
}: WriteMethodsDeps): Pick<Engine, WriteMethod> {
  return {
    async admit(sessionId, request) {
      const id = sessionIdOf(sessionId)
      const parsed = parseOrThrow(AdmitRequest, request, 'admit request')
      // Hashed before the write: awaiting crypto inside its transaction would commit it early.
      const files = parsed.attachments?.length
        ? await prepareAttachments(parsed.attachments, attachmentLimits)
        : undefined
      const input = {
        id: parsed.id ?? nanoid(),
        text: parsed.text,
        delivery: parsed.delivery,
        ...(files && { attachments: files.parts }),
      }
      const { answer, wrote } = await commands.admit(id, { input, ...(files && { files }) })
      // New input wakes the runner; a replay of a stored receipt is not new.
      if (wrote) notifyInput(id)
      return answer
    },

    async cancel(sessionId, inputId) {
      const id = sessionIdOf(sessionId)
      const input = parseOrThrow(Id, inputId, 'input id')
      const { answer } = await commands.cancel(id, { inputId: input })
      return answer
    },

    async edit(sessionId, inputId, request) {
      const id = sessionIdOf(sessionId)
      const input = parseOrThrow(Id, inputId, 'input id')
      const { text } = parseOrThrow(EditRequest, request, 'edit request')
      // Not news for the runner: an edit (like a cancel) never restarts a stopped session.
      const { answer } = await commands.edit(id, { inputId: input, text })
      return answer
    },

    async reorder(sessionId, inputId, request) {
      const id = sessionIdOf(sessionId)
      const input = parseOrThrow(Id, inputId, 'input id')
      const { before } = parseOrThrow(ReorderRequest, request, 'reorder request')
      const { answer } = await commands.reorder(id, { inputId: input, before })
      return answer
    },

    async setDelivery(sessionId, inputId, delivery) {
      const id = sessionIdOf(sessionId)
      const input = parseOrThrow(Id, inputId, 'input id')
      const how = parseOrThrow(SetDeliveryRequest, delivery, 'delivery')
      const { answer, wrote } = await commands.setDelivery(id, { inputId: input, delivery: how })
      // A queued input turned steer may be taken into the running turn: the runner looks again.
      if (wrote) notifyInput(id)
      return answer
    },

    async promote(sessionId, mode) {
      const id = sessionIdOf(sessionId)
      const how = parseOrThrow(PromoteMode, mode, 'promote mode')
      const { answer } = await commands.promote(id, { mode: how })
      return answer
    },

    async append(sessionId, events) {
      const id = sessionIdOf(sessionId)
      const parsed = parseOrThrow(AppendEvents, events, 'events', ['events'])
      const created = parsed.findIndex((e) => e.type === 'session/created')
      if (created >= 0) {
        throw new SessionlineError(
          'invalid_state',
          `events[${created}]: session/created is written by createSession only`,
          {
            index: created,
            type: 'session/created',
          },
        )
      }
      if (parsed.length === 0) {
        return cache.use(id, async (entry) => {
          await cache.loadCurrent(entry)
          return { headSeq: entry.snap?.row.headSeq ?? 0 }
        })
      }
      const { answer } = await commands.append(id, { events: parsed })
      return answer
    },

    async respondToApproval(sessionId, callId, answer) {
      const id = sessionIdOf(sessionId)
      const call = parseOrThrow(Id, callId, 'call id')
      const { approved, reason, remember } = parseOrThrow(ApprovalAnswer, answer, 'approval answer')
      const { answer: written } = await commands.respond(id, {
        callId: call,
        approved,
        remember,
        ...(reason === undefined ? {} : { reason }),
      })
      // The answer is the fact; the preference follows it (docs/decisions/0029): the call is
      // answered even if this write fails, and the tool then asks again next time.
      if (approved && remember !== 'call') {
        await changeApprovals(db, 'remember', written.tool, remember === 'session' ? id : undefined)
      }
    },
  }
}
