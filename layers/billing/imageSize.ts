/**
 * The pixel size of an image sent inline as a `data:` URL, read from its
 * header bytes (PNG, JPEG, GIF, WebP). Only a bounded prefix of the base64 is
 * decoded, so the cost does not grow with the image; `undefined` when the
 * format is unknown or the size is not within that prefix.
 */

export interface ImageSize {
  readonly width: number
  readonly height: number
}

/** Base64 characters decoded at most (192 KiB of image): room for JPEG's EXIF and ICC segments before the frame header. */
const HEADER_BASE64_CHARS = 256 * 1024

/** The decoded head of a base64 `data:` URL, or `undefined` when it is not one. */
export const dataUrlHead = (url: string, base64Chars = HEADER_BASE64_CHARS): Uint8Array | undefined => {
  if (!url.startsWith("data:")) return undefined
  const comma = url.indexOf(",")
  if (comma < 0 || !url.slice(0, comma).endsWith(";base64")) return undefined
  const end = Math.min(url.length, comma + 1 + base64Chars - (base64Chars % 4))
  return Buffer.from(url.slice(comma + 1, end), "base64")
}

const u16be = (b: Uint8Array, i: number) => (b[i]! << 8) | b[i + 1]!
const u16le = (b: Uint8Array, i: number) => b[i]! | (b[i + 1]! << 8)
const u24le = (b: Uint8Array, i: number) => b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16)
const u32be = (b: Uint8Array, i: number) => ((b[i]! << 24) >>> 0) + ((b[i + 1]! << 16) | (b[i + 2]! << 8) | b[i + 3]!)
const ascii = (b: Uint8Array, i: number, text: string) =>
  b.length >= i + text.length && [...text].every((c, k) => b[i + k] === c.charCodeAt(0))

const png = (b: Uint8Array): ImageSize | undefined =>
  b.length >= 24 && b[0] === 0x89 && ascii(b, 1, "PNG") && ascii(b, 12, "IHDR")
    ? { width: u32be(b, 16), height: u32be(b, 20) }
    : undefined

const gif = (b: Uint8Array): ImageSize | undefined =>
  b.length >= 10 && ascii(b, 0, "GIF8") ? { width: u16le(b, 6), height: u16le(b, 8) } : undefined

const webp = (b: Uint8Array): ImageSize | undefined => {
  if (!ascii(b, 0, "RIFF") || !ascii(b, 8, "WEBP") || b.length < 30) return undefined
  if (ascii(b, 12, "VP8X")) return { width: u24le(b, 24) + 1, height: u24le(b, 27) + 1 }
  if (ascii(b, 12, "VP8L") && b[20] === 0x2f) {
    const bits = b[21]! | (b[22]! << 8) | (b[23]! << 16) | (b[24]! << 24)
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 }
  }
  if (ascii(b, 12, "VP8 ")) return { width: u16le(b, 26) & 0x3fff, height: u16le(b, 28) & 0x3fff }
  return undefined
}

/** Start-of-frame markers carry the size: C0–CF except DHT (C4), JPG (C8) and DAC (CC). */
const isFrameHeader = (marker: number) => marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker)

const jpeg = (b: Uint8Array): ImageSize | undefined => {
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8) return undefined
  let i = 2
  while (i + 3 < b.length) {
    if (b[i] !== 0xff) return undefined
    const marker = b[i + 1]!
    if (marker === 0xff) {
      i++ // fill byte
      continue
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd9)) {
      i += 2 // a marker without a segment
      continue
    }
    const length = u16be(b, i + 2)
    if (isFrameHeader(marker)) return i + 8 < b.length ? { width: u16be(b, i + 7), height: u16be(b, i + 5) } : undefined
    i += 2 + length
  }
  return undefined
}

/** The size of an inline image, when its header says it. */
export const imageSizeOf = (url: string): ImageSize | undefined => {
  const head = dataUrlHead(url)
  if (head === undefined) return undefined
  const size = png(head) ?? jpeg(head) ?? gif(head) ?? webp(head)
  return size !== undefined && size.width > 0 && size.height > 0 ? size : undefined
}
