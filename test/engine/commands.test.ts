/**
 * The engine's command table (src/engine/commands.ts) is keyed by command type: these are type
 * checks (run by the typecheck; vitest runs them as no-ops), so a command the deciders know and
 * the table lacks fails to compile, as does a recipe whose answer is not the decider's.
 */
import { describe, expectTypeOf, test } from 'vitest'
import type { Answers, Command } from '../../src/core/decide'
import type { CommandRequest, CommandTable } from '../../src/engine/commands'
import type { Written } from '../../src/engine/write-path'

describe('command table', () => {
  test('has exactly one recipe per command type, answering what its decider answers', () => {
    expectTypeOf<keyof CommandTable>().toEqualTypeOf<Command['type']>()
    expectTypeOf<Omit<CommandTable, 'respond'>>().not.toExtend<CommandTable>()
    expectTypeOf<ReturnType<CommandTable['append']>>().toEqualTypeOf<Promise<Written<Answers['append']>>>()
  })

  test('a request is the command without its facts: the caller never gives what the transaction reads', () => {
    expectTypeOf<CommandRequest<'cancel'>>().toEqualTypeOf<{ inputId: string }>()
    expectTypeOf<CommandRequest<'admit'>>().not.toHaveProperty('stored')
    expectTypeOf<CommandRequest<'append'>>().not.toHaveProperty('owners')
  })
})
