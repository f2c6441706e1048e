/**
 * UTF-8 bytes of a string, for exports that hash and store megabytes of JSON.
 *
 * `TextEncoder.encode` took 45–66 ms for a 2 MB export in Chromium's worker where `encodeInto`
 * a buffer allocated up front took 20–30 ms (`npm run bench -- --quick --only portability`).
 * JSON is mostly ASCII, so the first buffer has one byte per UTF-16 unit and is exactly right
 * then; text with other characters grows it once to the worst case (three bytes per unit: a
 * surrogate pair, two units, takes four).
 */

const encoder = new TextEncoder()

/** The UTF-8 encoding of `text`, the same bytes `new TextEncoder().encode(text)` gives. */
export function utf8Bytes(text: string): Uint8Array<ArrayBuffer> {
  let bytes = new Uint8Array(text.length)
  let { read, written } = encoder.encodeInto(text, bytes)
  if (read < text.length) {
    const grown = new Uint8Array(written + (text.length - read) * 3)
    grown.set(bytes.subarray(0, written))
    // encodeInto never stops inside a surrogate pair, so the rest starts on a whole character.
    written += encoder.encodeInto(text.slice(read), grown.subarray(written)).written
    bytes = grown
  }
  return bytes.subarray(0, written)
}
