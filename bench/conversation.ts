/**
 * A chat client's request late in a conversation: a system prompt and twenty
 * turns sent again whole (~35 KB of prose), as every client sends them on
 * every turn. `BENCH_PAIR_BODY=conversation` loads it (bench/pair.ts): what
 * counting a long input costs a call, which the short bodies of the targets
 * do not show. Deterministic, so two checkouts get the same text.
 */
const WORDS = (
  "the gateway routes each call to a model and bills it exactly with a receipt while keeping the " +
  "privacy class honest so that a caller can trust what happened to every request and every cent"
).split(" ")

const text = (seed: number, words: number) =>
  Array.from({ length: words }, (_, i) => WORDS[(seed * 31 + i * 17 + (i * i) % 13) % WORDS.length]).join(" ")

export const conversationBody = (stream: boolean) =>
  JSON.stringify({
    model: "svc/bench",
    stream,
    messages: [
      { role: "system", content: text(0, 120) },
      ...Array.from({ length: 20 }, (_, turn) => ({ role: turn % 2 === 0 ? "user" : "assistant", content: text(turn + 1, 300) }))
    ]
  })
