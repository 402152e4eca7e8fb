/**
 * What a run sends the model: one chat request with the agent's preset, the
 * instructions and the retrieved knowledge as the system message, the
 * conversation so far, and the question last. History and knowledge each get
 * a budget of tokens, fixed before the run is held for, so the hold covers
 * the request whatever is retrieved: the newest turns that fit, and the best
 * sources that fit, in rank order.
 */
import type { Agent } from "../../services/Agents.ts"
import type { ChatRequest, Message } from "../../services/Chat.ts"
import type { Turn } from "../../services/Conversations.ts"
import type { Source } from "../../services/Retrieval.ts"

/** Tokens of conversation history a run may send (the newest turns that fit). */
export const HISTORY_TOKENS = 4000

/** Tokens of retrieved knowledge a run may send (the best sources that fit). */
export const KNOWLEDGE_TOKENS = 3000

/** Turns read back to fit into `HISTORY_TOKENS`. */
export const HISTORY_TURNS = 40

/** The newest turns whose tokens together fit `budget`, oldest first; a turn that does not fit ends the history. */
export const fitHistory = (turns: ReadonlyArray<Turn>, budget: number, count: (text: string) => number): ReadonlyArray<Turn> => {
  const kept: Array<Turn> = []
  let used = 0
  for (let i = turns.length - 1; i >= 0; i--) {
    used += count(turns[i]!.content)
    if (used > budget) break
    kept.unshift(turns[i]!)
  }
  return kept
}

/** How one source reads in the prompt (numbered, so an answer can cite it). */
const sourceText = (source: Source, index: number) => `[${index + 1}] ${source.title}\n${source.text}`

/** The best sources whose prompt text fits `budget` tokens together, in rank order. */
export const fitSources = (
  sources: ReadonlyArray<Source>,
  budget: number,
  count: (text: string) => number
): ReadonlyArray<Source> => {
  const kept: Array<Source> = []
  let used = 0
  for (const source of sources) {
    const tokens = count(sourceText(source, kept.length))
    if (used + tokens > budget) continue
    used += tokens
    kept.push(source)
  }
  return kept
}

const systemMessage = (agent: Agent, sources: ReadonlyArray<Source>): string => {
  if (sources.length === 0) return agent.instructions
  const knowledge = sources.map(sourceText).join("\n\n")
  const guide = "Answer from the knowledge below when it holds the answer, citing it as [n]; say so when it does not."
  return [agent.instructions, guide, knowledge].filter((part) => part !== "").join("\n\n")
}

/** The run's chat request. */
export const runRequest = (
  agent: Agent,
  history: ReadonlyArray<Turn>,
  sources: ReadonlyArray<Source>,
  input: string
): ChatRequest => {
  const system = systemMessage(agent, sources)
  const messages: Array<Message> = [
    ...(system === "" ? [] : [{ role: "system" as const, content: system }]),
    ...history.map((turn) => ({ role: turn.role, content: turn.content })),
    { role: "user", content: input }
  ]
  const { model, models, privacy, route } = agent.routing
  return {
    model,
    messages,
    ...(models !== undefined ? { models } : {}),
    ...(route !== undefined ? { route } : {}),
    ...(privacy !== undefined ? { privacy } : {})
  }
}
