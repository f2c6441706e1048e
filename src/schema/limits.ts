/**
 * Size limits of everything a caller hands the engine (README, "Limits"). A value over its
 * limit is refused with `invalid_input` naming the field, and nothing is written. Lengths of
 * strings are in UTF-16 code units (`string.length`); file sizes in bytes.
 */

/** Session, input, message and tool call ids. */
export const MAX_ID_LENGTH = 256
/** A session's title. */
export const MAX_TITLE_LENGTH = 500
/** The text of one admitted (or edited) input, about 200 KB. */
export const MAX_INPUT_TEXT = 100_000
/** Text or reasoning carried by one appended event (`user/message`, `assistant/delta`). */
export const MAX_EVENT_TEXT = 1_000_000
/** A tool's name in `tool/call`. */
export const MAX_TOOL_NAME = 256
/**
 * A tool call's input or a tool result's output: the characters of its strings and keys plus
 * one per value, close to the length of its JSON text.
 */
export const MAX_TOOL_PAYLOAD = 1_000_000
/** Nesting depth of a tool payload (an array or object inside another counts one level). */
export const MAX_JSON_DEPTH = 64
/** Events in one `append`. */
export const MAX_APPEND_EVENTS = 10_000
/** Texts and tool payloads of one `append`, summed (same measure as MAX_TOOL_PAYLOAD). */
export const MAX_APPEND_SIZE = 8_000_000
/** One imported session file: its `text` in characters, its Blob or File in bytes (256 MiB). */
export const MAX_IMPORT_FILE_BYTES = 256 * 1024 * 1024
/** Files in one `importFiles` call. */
export const MAX_IMPORT_FILES = 100_000
/** A file's name or path inside an imported folder. */
export const MAX_PATH_LENGTH = 4096
/** A provider's extra system prompt (`configure`). */
export const MAX_SYSTEM_PROMPT = 100_000
/**
 * One attachment of an admitted input, in bytes (25 MiB); `createEngine({attachments})` may set
 * a lower or higher one. Bigger files are refused with `invalid_input` and nothing is written.
 */
export const MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024
/** All attachments of one admitted input together, in bytes (100 MiB; configurable as above). */
export const MAX_INPUT_ATTACHMENT_BYTES = 100 * 1024 * 1024
/** Attachments in one admitted input. */
export const MAX_ATTACHMENTS = 32
/** An attachment's file name. */
export const MAX_ATTACHMENT_NAME = 1024
