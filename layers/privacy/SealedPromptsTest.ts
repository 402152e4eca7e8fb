/**
 * Sealed prompts for unit tests, without keys or cryptography: a "JWE" is
 * any string, and it opens only when the test scripted it (`sealed`: the
 * string → the messages it holds); every other one is refused with the 400
 * the real service gives a prompt sealed to a key it does not hold. With no
 * script, every sealed prompt is refused. One fake key is published; `rotate`
 * publishes the next (`test-key-1`, `test-key-2`, …).
 *
 * Not modelled: JOSE (headers, algorithms, tampering), the grace period of a
 * retired key, sharing keys between instances, and the messages' schema (the
 * scripted messages are handed back as given).
 */
import { Effect, Layer, Ref } from "effect"
import { InvalidRequest } from "../../services/ApiError.ts"
import type { Message } from "../../services/Chat.ts"
import { type PublicPromptKey, SealedPrompts } from "../../services/SealedPrompts.ts"

const fakeKey = (n: number): PublicPromptKey => ({
  kty: "EC",
  crv: "P-256",
  x: `test-x-${n}`,
  y: `test-y-${n}`,
  kid: `test-key-${n}`,
  use: "enc",
  alg: "ECDH-ES"
})

export const SealedPromptsTest = (
  sealed: Readonly<Record<string, ReadonlyArray<Message>>> = {}
): Layer.Layer<SealedPrompts> =>
  Layer.effect(
    SealedPrompts,
    Effect.map(Ref.make(1), (current) =>
      SealedPrompts.of({
        publicKeys: Effect.map(Ref.get(current), (n) => [fakeKey(n)]),
        open: (jwe) =>
          Object.hasOwn(sealed, jwe)
            ? Effect.succeed(sealed[jwe]!)
            : new InvalidRequest({
              message: "privacy.encryptedPrompt could not be opened: it was altered, or not sealed to a key from GET /v1/privacy/keys.",
              param: "privacy.encryptedPrompt"
            }),
        rotate: Effect.map(Ref.updateAndGet(current, (n) => n + 1), fakeKey)
      }))
  )
