/** The key's agents (for a key with the `agents` scope): documents and conversations, and one agent's documents. */
import { get, type Page } from "./api.ts"
import { byId, el, table, time } from "./render.ts"

interface Agent {
  readonly id: string
  readonly name: string
  readonly document_count: number
  readonly conversation_count: number
  readonly conversation_cap: number
  readonly created_at: string
}

interface Document {
  readonly id: string
  readonly title: string
  readonly characters: number
  readonly chunks: number
  readonly created_at: string
}

const openDocuments = async (agent: Agent) => {
  const documents = await get<Page<Document>>(`/v1/agents/${encodeURIComponent(agent.id)}/documents?limit=100`)
  const target = byId<HTMLTableElement>("documents")
  table(target, `Documents of ${agent.name}`, ["Title", "Characters", "Chunks", "Added"], documents.data.map((document) => [
    document.title,
    String(document.characters),
    String(document.chunks),
    time(document.created_at)
  ]))
  target.closest<HTMLElement>(".scroll")!.hidden = false
}

export const loadAgents = async (report: (error: unknown) => void) => {
  const agents = await get<Page<Agent>>("/v1/agents?limit=100")
  table(byId("agents"), "Newest first", ["Agent", "Documents", "Conversations", "Created"], agents.data.map((agent) => {
    const open = el("button", agent.name, { type: "button", class: "link" })
    open.addEventListener("click", () => void openDocuments(agent).catch(report))
    return [open, String(agent.document_count), `${agent.conversation_count} of ${agent.conversation_cap}`, time(agent.created_at)]
  }))
}
