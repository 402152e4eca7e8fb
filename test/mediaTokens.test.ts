/**
 * What an image, audio or file part reserves: image sizes read from their
 * headers, OpenAI's tile rule, and the size-based bounds for audio and files.
 */
import { describe, expect, it } from "vitest"
import { imageSizeOf } from "../layers/billing/imageSize.ts"
import { highDetailTokens, imageTokens, MAX_IMAGE_TOKENS } from "../layers/billing/imageTokens.ts"
import { audioTokens, base64Bytes, FILE_MIN_TOKENS, FILE_REFERENCE_TOKENS, fileTokens } from "../layers/billing/mediaTokens.ts"

const dataUrl = (mime: string, bytes: Buffer) => `data:${mime};base64,${bytes.toString("base64")}`

const png = (width: number, height: number) => {
  const head = Buffer.alloc(33)
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(head, 0)
  head.writeUInt32BE(13, 8)
  head.write("IHDR", 12, "latin1")
  head.writeUInt32BE(width, 16)
  head.writeUInt32BE(height, 20)
  return dataUrl("image/png", head)
}

const gif = (width: number, height: number) => {
  const head = Buffer.alloc(13)
  head.write("GIF89a", 0, "latin1")
  head.writeUInt16LE(width, 6)
  head.writeUInt16LE(height, 8)
  return dataUrl("image/gif", head)
}

/** A JPEG with an APP1 segment (as EXIF data would be) before its frame header. */
const jpeg = (width: number, height: number) => {
  const app1 = Buffer.concat([Buffer.from([0xff, 0xe1, 0x10, 0x02]), Buffer.alloc(0x1000)])
  const sof = Buffer.from([0xff, 0xc0, 0x00, 0x11, 0x08, height >> 8, height & 0xff, width >> 8, width & 0xff, 0x03])
  return dataUrl("image/jpeg", Buffer.concat([Buffer.from([0xff, 0xd8]), app1, sof, Buffer.alloc(20)]))
}

const webp = (chunk: "VP8X" | "VP8L" | "VP8 ", width: number, height: number) => {
  const head = Buffer.alloc(40)
  head.write("RIFF", 0, "latin1")
  head.write("WEBP", 8, "latin1")
  head.write(chunk, 12, "latin1")
  if (chunk === "VP8X") {
    head.writeUIntLE(width - 1, 24, 3)
    head.writeUIntLE(height - 1, 27, 3)
  } else if (chunk === "VP8L") {
    head[20] = 0x2f
    head.writeUInt32LE(((width - 1) | ((height - 1) << 14)) >>> 0, 21)
  } else {
    head.writeUInt16LE(width, 26)
    head.writeUInt16LE(height, 28)
  }
  return dataUrl("image/webp", head)
}

describe("image sizes from header bytes", () => {
  it("reads PNG, GIF, JPEG and the three WebP kinds", () => {
    expect(imageSizeOf(png(1024, 768))).toEqual({ width: 1024, height: 768 })
    expect(imageSizeOf(gif(300, 200))).toEqual({ width: 300, height: 200 })
    expect(imageSizeOf(jpeg(4032, 3024))).toEqual({ width: 4032, height: 3024 })
    expect(imageSizeOf(webp("VP8X", 5000, 100))).toEqual({ width: 5000, height: 100 })
    expect(imageSizeOf(webp("VP8L", 640, 480))).toEqual({ width: 640, height: 480 })
    expect(imageSizeOf(webp("VP8 ", 800, 600))).toEqual({ width: 800, height: 600 })
  })

  it("knows nothing of a remote URL, a truncated header or another format", () => {
    expect(imageSizeOf("https://example.com/a.png")).toBeUndefined()
    expect(imageSizeOf("data:image/png;base64,AAAA")).toBeUndefined()
    expect(imageSizeOf(dataUrl("image/bmp", Buffer.from("BM0000000000000000000000000000")))).toBeUndefined()
    expect(imageSizeOf("data:image/png,not-base64")).toBeUndefined()
  })
})

describe("image tokens", () => {
  it("follows OpenAI's tile rule for high detail", () => {
    expect(highDetailTokens({ width: 1024, height: 1024 })).toBe(765) // 768×768: 2×2 tiles
    expect(highDetailTokens({ width: 2048, height: 4096 })).toBe(1105) // 768×1536: 2×3 tiles
    expect(highDetailTokens({ width: 512, height: 512 })).toBe(255) // one tile
    expect(highDetailTokens({ width: 100_000, height: 100_000 })).toBe(765)
    expect(highDetailTokens({ width: 768, height: 2048 })).toBe(MAX_IMAGE_TOKENS)
  })

  it("is 85 at low detail, the tile rule otherwise, and the rule's maximum when the size is unknown", () => {
    expect(imageTokens({ url: png(1024, 1024), detail: "low" })).toBe(85)
    expect(imageTokens({ url: png(1024, 1024) })).toBe(765)
    expect(imageTokens({ url: jpeg(4032, 3024), detail: "auto" })).toBe(765)
    expect(imageTokens({ url: "https://example.com/a.png", detail: "high" })).toBe(1445)
    expect(imageTokens({ url: "https://example.com/a.png" })).toBe(1445)
  })

  it("never reserves more than the unknown-size figure", () => {
    for (const [w, h] of [[1, 1], [1, 100_000], [100_000, 1], [2048, 768], [1536, 1536], [3000, 7]]) {
      expect(highDetailTokens({ width: w!, height: h! })).toBeLessThanOrEqual(MAX_IMAGE_TOKENS)
    }
  })
})

describe("audio and file tokens", () => {
  it("measures base64 without decoding it", () => {
    for (const n of [0, 1, 2, 3, 4, 100, 1001]) {
      const bytes = Buffer.alloc(n, 7)
      expect(base64Bytes(bytes.toString("base64"))).toBe(n)
      expect(base64Bytes(dataUrl("application/pdf", bytes))).toBe(n)
    }
  })

  it("bounds audio by its duration at the lowest byte rate, or a PCM WAV's own rate", () => {
    // 100 s of 8 kbit/s MP3 is 100,000 bytes: at most 32 tokens a second.
    expect(audioTokens({ type: "input_audio", input_audio: { data: Buffer.alloc(100_000).toString("base64"), format: "mp3" } }))
      .toBe(3200)
    const wav = Buffer.alloc(44 + 32_000 * 10)
    wav.write("RIFF", 0, "latin1")
    wav.write("WAVEfmt ", 8, "latin1")
    wav.writeUInt16LE(1, 20) // PCM
    wav.writeUInt16LE(1, 22) // mono
    wav.writeUInt32LE(16_000, 24) // 16 kHz
    wav.writeUInt16LE(16, 34) // 16-bit: 32,000 bytes a second, so ten seconds
    expect(audioTokens({ type: "input_audio", input_audio: { data: wav.toString("base64"), format: "wav" } })).toBe(321)
    expect(audioTokens({ type: "input_audio" })).toBe(1)
  })

  it("bounds an inline file by its bytes, at least a page, and reserves a fixed amount for a file id", () => {
    const pdf = (n: number) => ({ type: "file" as const, file: { file_data: dataUrl("application/pdf", Buffer.alloc(n)) } })
    expect(fileTokens(pdf(100_000))).toBe(100_000)
    expect(fileTokens(pdf(10))).toBe(FILE_MIN_TOKENS)
    expect(fileTokens({ type: "file", file: { file_id: "file-abc" } })).toBe(FILE_REFERENCE_TOKENS)
  })
})
