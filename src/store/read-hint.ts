/**
 * The read hint a session row carries (docs/decisions/0038, amendment): what the page's first
 * read (store/first-screen.ts) would otherwise read beside the row, written by the engine in the
 * same transaction as the row. A current hint also vouches that no stored row of the session has
 * a seq above the row's `headSeq` (the engine writes rows only from its log, in the transaction
 * that moves the head). It holds only while the row's `rev` is the hint's own: a writer
 * that does not keep it (an older library, a path that does not know these facts) bumps `rev`
 * all the same, and a reader then reads the stores themselves. No Dexie here: the page's reader
 * imports this module.
 *
 * @example
 *   const hint = currentReadHint(row)
 *   if (hint?.pending === 0) // no pending receipts to read
 */

/** See the module comment. */
export interface ReadHint {
  /** The session row's `rev` when this was true. */
  rev: number
  /** How many of the session's receipts are pending. */
  pending: number
  /** The version the transcript fold is stored in; absent when the writer did not know it. */
  transcript?: number
}

/** The read hint of `row`, when it still holds. */
export const currentReadHint = (row: { rev: number; readHint?: ReadHint }): ReadHint | undefined =>
  row.readHint?.rev === row.rev ? row.readHint : undefined
