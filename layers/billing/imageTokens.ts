/**
 * Input tokens reserved for an image part, by OpenAI's published rule for the
 * GPT-4o family:
 *
 * - `detail: "low"`: 85 tokens, whatever the size.
 * - otherwise (`high`, `auto` or none, since `auto` may choose high): the image
 *   is scaled to fit in 2048×2048, then down so its shorter side is at most
 *   768 px, and costs 85 + 170 per 512 px tile covering it.
 * - a size we cannot read (a remote URL, an unknown format): the most that
 *   rule can give, 2 × 4 tiles (768×2048) = 1,445 tokens.
 */
import { type ImageSize, imageSizeOf } from "./imageSize.ts"

export const LOW_DETAIL_TOKENS = 85
const TILE_TOKENS = 170
const TILE = 512
const FIT = 2048
const SHORT_SIDE = 768

/** The largest count the high-detail rule gives (768×2048 → 8 tiles). */
export const MAX_IMAGE_TOKENS = LOW_DETAIL_TOKENS + TILE_TOKENS * 8

export const highDetailTokens = ({ height, width }: ImageSize): number => {
  const fit = Math.min(1, FIT / Math.max(width, height))
  let w = width * fit
  let h = height * fit
  const shorten = Math.min(1, SHORT_SIDE / Math.min(w, h))
  w *= shorten
  h *= shorten
  const tiles = Math.ceil(w / TILE) * Math.ceil(h / TILE)
  return Math.min(MAX_IMAGE_TOKENS, LOW_DETAIL_TOKENS + TILE_TOKENS * tiles)
}

export const imageTokens = (image: { readonly url: string; readonly detail?: string | undefined }): number => {
  if (image.detail === "low") return LOW_DETAIL_TOKENS
  const size = imageSizeOf(image.url)
  return size === undefined ? MAX_IMAGE_TOKENS : highDetailTokens(size)
}
