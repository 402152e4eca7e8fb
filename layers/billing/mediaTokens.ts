/**
 * Input tokens reserved for `input_audio` and `file` parts, from their size
 * (nothing is decoded beyond a WAV header):
 *
 * - Audio: its duration is at most its bytes over the lowest byte rate it can
 *   have — a PCM WAV header's own byte rate when it has one, else 1,000 B/s
 *   (8 kbit/s, the lowest MP3 rate) — and a second of audio costs at most
 *   32 tokens (Gemini's rate; OpenAI's is lower).
 * - A file sent inline (`file_data`): one token per byte of the file, and at
 *   least `FILE_MIN_TOKENS` (one PDF page read as text plus its picture).
 * - A file named by `file_id` only: its size is not in the request, so
 *   `FILE_REFERENCE_TOKENS` are reserved.
 */
const AUDIO_TOKENS_PER_SECOND = 32
const MIN_AUDIO_BYTES_PER_SECOND = 1000
export const FILE_MIN_TOKENS = 3000
export const FILE_REFERENCE_TOKENS = 32_000

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

/** Bytes a base64 text decodes to (a `data:` URL's payload, or bare base64), without decoding it. */
export const base64Bytes = (data: string): number => {
  const comma = data.startsWith("data:") ? data.indexOf(",") : -1
  let chars = data.length - (comma + 1)
  let padding = 0
  while (padding < 2 && chars > 0 && data.charCodeAt(data.length - 1 - padding) === 61) padding++
  chars -= padding
  return Math.floor((chars * 3) / 4)
}

/** A PCM WAV header's byte rate (sample rate × channels × bytes per sample), when the data starts with one. */
const wavByteRate = (data: string): number | undefined => {
  const head = Buffer.from(data.slice(0, 64), "base64")
  if (head.length < 36 || head.toString("latin1", 0, 4) !== "RIFF" || head.toString("latin1", 8, 16) !== "WAVEfmt ") {
    return undefined
  }
  if (head.readUInt16LE(20) !== 1) return undefined
  const rate = head.readUInt32LE(24) * head.readUInt16LE(22) * Math.ceil(head.readUInt16LE(34) / 8)
  return rate > 0 ? rate : undefined
}

export const audioTokens = (part: Record<string, unknown>): number => {
  const audio = isRecord(part.input_audio) ? part.input_audio : {}
  const data = typeof audio.data === "string" ? audio.data : ""
  const bytes = base64Bytes(data)
  const rate = Math.max(MIN_AUDIO_BYTES_PER_SECOND, wavByteRate(data) ?? MIN_AUDIO_BYTES_PER_SECOND)
  return Math.max(1, Math.ceil((bytes / rate) * AUDIO_TOKENS_PER_SECOND))
}

export const fileTokens = (part: Record<string, unknown>): number => {
  const file = isRecord(part.file) ? part.file : {}
  if (typeof file.file_data !== "string") return FILE_REFERENCE_TOKENS
  return Math.max(FILE_MIN_TOKENS, base64Bytes(file.file_data))
}
