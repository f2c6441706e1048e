/**
 * The engine's command table: for every command of core/decide, the recipe that runs it through
 * the write path, i.e. the facts it is judged on (read inside the write transaction), the ids
 * those facts are about, and what the cache lets a guess expect of them. The table is a mapped
 * type over `Command['type']`: a command added to the deciders without a recipe here does not
 * compile. The engine's methods parse their arguments, run a recipe and do what follows it.
 *
 * @example
 *   const commands = createCommandTable(db, writePath.write)
 *   const { answer, wrote } = await commands.cancel(sessionId, { inputId })
 */
import type { Answers, Command, CommandOf } from '../core/decide'
import { type IdOwner, rowIdsCreated } from '../core/ids'
import type { InputReceipt } from '../schema/inputs'
import type { PreparedAttachment } from '../store/attachments'
import { storeAttachments } from '../store/attachments'
import type { SessionlineDb } from '../store/db'
import { getReceipt, idOwners, rowOwner } from '../store/transactions'
import { type Snapshot, sameReceipt } from './session-cache'
import type { createWritePath, Expectation, Written } from './write-path'

/** The fields of a command that are facts, read in the write transaction: never the caller's. */
type FactField = 'stored' | 'rowOwner' | 'storedBefore' | 'owners'

/** More than the command a caller gives, by command type. */
interface CommandExtras {
  /** An admit's attachment bytes, stored in the same transaction when the admit writes. */
  admit: { files?: { stored: readonly PreparedAttachment[] } }
}

/** What a caller gives to run a command: the command without its type and its facts. */
export type CommandRequest<K extends Command['type']> = Omit<CommandOf<K>, 'type' | FactField> &
  (K extends keyof CommandExtras ? CommandExtras[K] : unknown)

/** Runs a command of type `K` on a session and answers what it answers, and whether it wrote. */
export type Recipe<K extends Command['type']> = (
  sessionId: string,
  request: CommandRequest<K>,
) => Promise<Written<Answers[K]>>

/** One recipe per command type. */
export type CommandTable = { readonly [K in Command['type']]: Recipe<K> }

type Write = ReturnType<typeof createWritePath>['write']

/** Promotions and answers read nothing but the session row: a current `rev` is all they need. */
const alwaysCurrent = (): Expectation<undefined> => ({ facts: undefined, holds: () => true })

/** A cancel, edit or delivery change can be decided from the cache when the input is pending there. */
function expectPending(cached: Snapshot, inputId: string): Expectation<InputReceipt | undefined> | undefined {
  const receipt = cached.pending.find((r) => r.id === inputId)
  if (!receipt) return undefined
  return {
    facts: receipt,
    holds: (stored) => stored !== undefined && sameReceipt(stored, receipt),
  }
}

export function createCommandTable(db: SessionlineDb, write: Write): CommandTable {
  return {
    admit: (sessionId, { input, files }) =>
      write<'admit', [InputReceipt | undefined, IdOwner | undefined]>(sessionId, {
        scope: 'inbox',
        ...(files && { alsoStore: () => storeAttachments(db, sessionId, files.stored) }),
        keys: [input.id],
        readFacts: () => Promise.all([getReceipt(db, input.id), rowOwner(db, input.id)]),
        command: ([stored, owner]) => ({ type: 'admit', input, stored, rowOwner: owner }),
        // A new id: no row has it (read), and no input (the receipt is added, not put: an
        // existing one aborts the guess, and the careful path answers the retry or conflict).
        expect: () => ({
          facts: [undefined, undefined],
          readFacts: () => Promise.all([undefined, rowOwner(db, input.id)]),
          holds: ([, owner]) => !owner,
        }),
      }),

    cancel: (sessionId, { inputId }) =>
      write<'cancel', InputReceipt | undefined>(sessionId, {
        scope: 'inbox',
        keys: [inputId],
        readFacts: () => getReceipt(db, inputId),
        command: (stored) => ({ type: 'cancel', inputId, stored }),
        expect: (cached) => expectPending(cached, inputId),
      }),

    edit: (sessionId, { inputId, text }) =>
      write<'edit', InputReceipt | undefined>(sessionId, {
        scope: 'inbox',
        keys: [inputId],
        readFacts: () => getReceipt(db, inputId),
        command: (stored) => ({ type: 'edit', inputId, text, stored }),
        expect: (cached) => expectPending(cached, inputId),
      }),

    reorder: (sessionId, { inputId, before }) =>
      write<'reorder', (InputReceipt | undefined)[]>(sessionId, {
        scope: 'inbox',
        keys: before === null ? [inputId] : [inputId, before],
        readFacts: () =>
          Promise.all([getReceipt(db, inputId), before === null ? undefined : getReceipt(db, before)]),
        command: ([stored, storedBefore]) => ({ type: 'reorder', inputId, before, stored, storedBefore }),
      }),

    setDelivery: (sessionId, { inputId, delivery }) =>
      write<'setDelivery', InputReceipt | undefined>(sessionId, {
        scope: 'inbox',
        keys: [inputId],
        readFacts: () => getReceipt(db, inputId),
        command: (stored) => ({ type: 'setDelivery', inputId, delivery, stored }),
        expect: (cached) => expectPending(cached, inputId),
      }),

    promote: (sessionId, { mode }) =>
      write<'promote'>(sessionId, { command: () => ({ type: 'promote', mode }), expect: alwaysCurrent }),

    append: (sessionId, { events }) => {
      // Ids this append gives rows to must be free in every session (core/ids); who owns them is
      // read inside the write transaction, together with the session row.
      const ids = rowIdsCreated(events)
      return write<'append', (IdOwner | undefined)[]>(sessionId, {
        keys: ids,
        readFacts: () => idOwners(db, ids),
        command: (owners) => ({ type: 'append', events, owners }),
        expect: () => ({ facts: ids.map(() => undefined), holds: (owners) => owners.every((o) => !o) }),
      })
    },

    respond: (sessionId, request) =>
      write<'respond'>(sessionId, {
        command: () => ({ type: 'respond', ...request }),
        expect: alwaysCurrent,
      }),
  }
}
