/**
 * The text part for a sessionline thread: assistant-ui's `MessagePartPrimitive.Text`, revealed
 * smoothly while the part streams and shown whole the moment it stops.
 *
 * assistant-ui reveals streamed text with a typewriter animation (`smooth`, on by default) that
 * keeps typing out what already arrived for up to 250 ms after the message stopped running. After
 * Stop that reads as text arriving once Stop went disabled: the stopped answer's last characters
 * appear after the run ended. Here the reveal is on only while the part runs; an interrupted or
 * finished part shows its text at once, so nothing appears after Stop.
 */
import { MessagePartPrimitive, type TextMessagePartProps } from '@assistant-ui/react'
import { createElement, type ReactElement } from 'react'

/**
 * A text part that animates only while it streams; pass it as `MessagePrimitive.Parts`'s `Text`.
 *
 * @example
 *   <MessagePrimitive.Parts components={{ Text: SessionlineText }} />
 */
export function SessionlineText({ status }: TextMessagePartProps): ReactElement {
  return createElement(MessagePartPrimitive.Text, { smooth: status.type === 'running' })
}
