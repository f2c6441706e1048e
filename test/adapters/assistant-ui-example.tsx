import {
  ActionBarPrimitive,
  AssistantRuntimeProvider,
  BranchPickerPrimitive,
  ComposerPrimitive,
  MessagePrimitive,
  ThreadPrimitive,
  type ToolCallMessagePartProps,
} from '@assistant-ui/react'
import type { SessionView } from 'sessionline'
import { SessionlineText, useSessionlineRuntime } from 'sessionline/assistant-ui'

// Tools run in the worker; a call shows by name (assistant-ui renders no tool call by default).
function ToolCall({ toolName, status }: ToolCallMessagePartProps) {
  return <code data-tool={toolName} data-state={status.type} />
}

export function Thread({ view }: { view: SessionView }) {
  const runtime = useSessionlineRuntime(view)
  return (
    <AssistantRuntimeProvider runtime={runtime}>
      <ThreadPrimitive.Root className="thread">
        <ThreadPrimitive.Viewport>
          <ThreadPrimitive.Messages>
            {({ message }) =>
              message.composer.isEditing ? (
                // Edit: the prompt again with new text, answered on a new branch.
                <ComposerPrimitive.Root className="edit">
                  <ComposerPrimitive.Input />
                  <ComposerPrimitive.Send>Resend</ComposerPrimitive.Send>
                  <ComposerPrimitive.Cancel>Cancel</ComposerPrimitive.Cancel>
                </ComposerPrimitive.Root>
              ) : (
                <>
                  <MessagePrimitive.Root
                    data-id={message.id}
                    data-role={message.role}
                    data-status={message.status?.type}
                    data-reason={
                      message.status && 'reason' in message.status ? message.status.reason : undefined
                    }
                  >
                    {/* SessionlineText: once Stop ends the run, no text appears after it. */}
                    <MessagePrimitive.Parts
                      components={{ Text: SessionlineText, tools: { Fallback: ToolCall } }}
                    />
                  </MessagePrimitive.Root>
                  {/* "2 / 3": the branches at this message, stored with the session's head. */}
                  <BranchPickerPrimitive.Root hideWhenSingleBranch className="branches">
                    <BranchPickerPrimitive.Previous>‹</BranchPickerPrimitive.Previous>
                    <BranchPickerPrimitive.Number /> / <BranchPickerPrimitive.Count />
                    <BranchPickerPrimitive.Next>›</BranchPickerPrimitive.Next>
                  </BranchPickerPrimitive.Root>
                  <ActionBarPrimitive.Root hideWhenRunning className="actions">
                    {message.role === 'user' ? (
                      <ActionBarPrimitive.Edit>Edit</ActionBarPrimitive.Edit>
                    ) : (
                      <ActionBarPrimitive.Reload>Regenerate</ActionBarPrimitive.Reload>
                    )}
                  </ActionBarPrimitive.Root>
                </>
              )
            }
          </ThreadPrimitive.Messages>
        </ThreadPrimitive.Viewport>
        <ComposerPrimitive.Queue>
          {({ queueItem }) => (
            <div className="queued" data-id={queueItem.id}>
              {queueItem.prompt}
            </div>
          )}
        </ComposerPrimitive.Queue>
        <ComposerPrimitive.Root>
          <ComposerPrimitive.Input />
          {/* Send steers while a turn runs (it joins at the next safe boundary); Queue waits for its own turn. */}
          <ComposerPrimitive.Send>Send</ComposerPrimitive.Send>
          <button
            type="button"
            className="queue"
            onClick={() => runtime.thread.composer.send({ steer: false })}
          >
            Queue
          </button>
          <ComposerPrimitive.Cancel>Stop</ComposerPrimitive.Cancel>
        </ComposerPrimitive.Root>
      </ThreadPrimitive.Root>
    </AssistantRuntimeProvider>
  )
}
